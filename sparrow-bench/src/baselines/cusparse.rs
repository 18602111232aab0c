//! cuSPARSE SpMM and SpMV through cudarc's bindings, on the same device buffers as ours.
//!
//! cuSPARSE is given 32-bit row offsets and column indices (its fastest configuration; mixed
//! 64/32-bit indices are not accepted by all of its algorithms), converted once at setup.

use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::cusparse::sys as cs;
use cudarc::driver::CudaSlice;

use sparrow::device::{DeviceCsr, DeviceDense, Gpu};
use sparrow::matrix::Csr;
use sparrow::{Error, Result, Scalar};

fn check(r: cs::cusparseStatus_t, what: &str) -> Result<()> {
    if r == cs::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::device(format!("cuSPARSE {what}"), format!("{r:?}")))
    }
}

fn dtype<T: Scalar>() -> cs::cudaDataType {
    if T::NAME == "f32" {
        cs::cudaDataType::CUDA_R_32F
    } else {
        cs::cudaDataType::CUDA_R_64F
    }
}

/// A prepared call that can be enqueued repeatedly on the GPU's stream.
pub trait Enqueue {
    /// Enqueues the call.
    fn enqueue(&self) -> Result<()>;
}

/// A cuSPARSE handle bound to a GPU's stream.
pub struct Cusparse {
    gpu: Arc<Gpu>,
    handle: cs::cusparseHandle_t,
}

impl Drop for Cusparse {
    fn drop(&mut self) {
        unsafe {
            cs::cusparseDestroy(self.handle);
        }
    }
}

/// SpMM algorithms worth comparing for row-major B and C.
pub const SPMM_ALGS: [(&str, cs::cusparseSpMMAlg_t); 4] = [
    ("default", cs::cusparseSpMMAlg_t::CUSPARSE_SPMM_ALG_DEFAULT),
    ("csr_alg1", cs::cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG1),
    ("csr_alg2", cs::cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG2),
    ("csr_alg3", cs::cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG3),
];

/// SpMV algorithms worth comparing.
pub const SPMV_ALGS: [(&str, cs::cusparseSpMVAlg_t); 3] = [
    ("default", cs::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT),
    ("csr_alg1", cs::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG1),
    ("csr_alg2", cs::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG2),
];

impl Cusparse {
    /// Creates a handle on `gpu`'s stream; fails when libcusparse cannot be loaded.
    pub fn new(gpu: Arc<Gpu>) -> Result<Self> {
        if !unsafe { cs::is_culib_present() } {
            return Err(Error::unsupported(
                "libcusparse was not found; add the CUDA lib64 folder to LD_LIBRARY_PATH",
            ));
        }
        let mut handle = std::ptr::null_mut();
        check(unsafe { cs::cusparseCreate(&mut handle) }, "cusparseCreate")?;
        let me = Cusparse { gpu, handle };
        check(
            unsafe { cs::cusparseSetStream(me.handle, me.gpu.stream().cu_stream() as _) },
            "cusparseSetStream",
        )?;
        Ok(me)
    }
}

/// A CSR matrix in cuSPARSE's 32-bit index form, with its descriptor.
pub struct CsrDescr<T> {
    descr: cs::cusparseSpMatDescr_t,
    _row_ptr: CudaSlice<i32>,
    nrows: usize,
    ncols: usize,
    _marker: PhantomData<T>,
}

impl<T> Drop for CsrDescr<T> {
    fn drop(&mut self) {
        unsafe {
            cs::cusparseDestroySpMat(self.descr);
        }
    }
}

impl<T: Scalar> CsrDescr<T> {
    /// Describes `da` (already on the GPU) to cuSPARSE; `a` supplies the row offsets, which are
    /// narrowed to 32 bits.
    pub fn new(gpu: &Gpu, a: &Csr<T>, da: &DeviceCsr<T>) -> Result<Self> {
        if a.nnz() > i32::MAX as usize {
            return Err(Error::unsupported(
                "the cuSPARSE baseline uses 32-bit offsets: nnz must be below 2^31",
            ));
        }
        let rp: Vec<i32> = a.row_ptr().iter().map(|&x| x as i32).collect();
        let row_ptr = gpu.upload(&rp)?;
        let mut descr = std::ptr::null_mut();
        check(
            unsafe {
                cs::cusparseCreateCsr(
                    &mut descr,
                    a.nrows() as i64,
                    a.ncols() as i64,
                    a.nnz() as i64,
                    gpu.ptr(&row_ptr) as *mut _,
                    gpu.ptr(&da.col_idx) as *mut _,
                    gpu.ptr(&da.values) as *mut _,
                    cs::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    cs::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    cs::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    dtype::<T>(),
                )
            },
            "cusparseCreateCsr",
        )?;
        Ok(CsrDescr {
            descr,
            _row_ptr: row_ptr,
            nrows: a.nrows(),
            ncols: a.ncols(),
            _marker: PhantomData,
        })
    }
}

fn dn_mat<T: Scalar>(gpu: &Gpu, m: &DeviceDense<T>) -> Result<cs::cusparseDnMatDescr_t> {
    let mut d = std::ptr::null_mut();
    check(
        unsafe {
            cs::cusparseCreateDnMat(
                &mut d,
                m.nrows as i64,
                m.ncols as i64,
                m.ld as i64,
                gpu.ptr(&m.buf) as *mut _,
                dtype::<T>(),
                cs::cusparseOrder_t::CUSPARSE_ORDER_ROW,
            )
        },
        "cusparseCreateDnMat",
    )?;
    Ok(d)
}

/// One prepared cuSPARSE SpMM: descriptors and workspace, ready to enqueue repeatedly.
pub struct SpmmCall<'a, T> {
    cs: &'a Cusparse,
    a: &'a CsrDescr<T>,
    b: cs::cusparseDnMatDescr_t,
    c: cs::cusparseDnMatDescr_t,
    alg: cs::cusparseSpMMAlg_t,
    alpha: T,
    beta: T,
    work: CudaSlice<u8>,
    _borrow: PhantomData<(&'a DeviceDense<T>, &'a mut DeviceDense<T>)>,
}

impl<T> Drop for SpmmCall<'_, T> {
    fn drop(&mut self) {
        unsafe {
            cs::cusparseDestroyDnMat(self.b);
            cs::cusparseDestroyDnMat(self.c);
        }
    }
}

impl<'a, T: Scalar> SpmmCall<'a, T> {
    /// Prepares `C = alpha * A * B + beta * C` with algorithm `alg` (buffer size and, where
    /// the algorithm has one, the preprocessing step). Returns `Unsupported` when cuSPARSE
    /// refuses the algorithm for this layout.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cs_: &'a Cusparse,
        a: &'a CsrDescr<T>,
        b: &'a DeviceDense<T>,
        c: &'a mut DeviceDense<T>,
        alpha: T,
        beta: T,
        alg: cs::cusparseSpMMAlg_t,
    ) -> Result<Self> {
        sparrow::ops::spmm::check_shapes(a.nrows, a.ncols, (b.nrows, b.ncols), (c.nrows, c.ncols))?;
        let gpu = &cs_.gpu;
        let bd = dn_mat(gpu, b)?;
        let cd = dn_mat(gpu, c)?;
        let mut call = SpmmCall {
            cs: cs_,
            a,
            b: bd,
            c: cd,
            alg,
            alpha,
            beta,
            work: gpu.alloc_zeroed::<u8>(0)?,
            _borrow: PhantomData,
        };
        let op = cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        let mut size = 0usize;
        let r = unsafe {
            cs::cusparseSpMM_bufferSize(
                cs_.handle,
                op,
                op,
                &call.alpha as *const T as *const _,
                a.descr as _,
                call.b as _,
                &call.beta as *const T as *const _,
                call.c,
                dtype::<T>(),
                alg,
                &mut size,
            )
        };
        if r != cs::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
            return Err(Error::unsupported(format!("cuSPARSE SpMM {alg:?}: {r:?}")));
        }
        call.work = gpu.alloc_zeroed::<u8>(size)?;
        if alg == cs::cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG3 {
            let r = unsafe {
                cs::cusparseSpMM_preprocess(
                    cs_.handle,
                    op,
                    op,
                    &call.alpha as *const T as *const _,
                    a.descr as _,
                    call.b as _,
                    &call.beta as *const T as *const _,
                    call.c,
                    dtype::<T>(),
                    alg,
                    gpu.ptr(&call.work) as *mut _,
                )
            };
            if r != cs::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
                return Err(Error::unsupported(format!(
                    "cuSPARSE SpMM preprocess {alg:?}: {r:?}"
                )));
            }
        }
        Ok(call)
    }
}

impl<T: Scalar> Enqueue for SpmmCall<'_, T> {
    fn enqueue(&self) -> Result<()> {
        let op = cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        check(
            unsafe {
                cs::cusparseSpMM(
                    self.cs.handle,
                    op,
                    op,
                    &self.alpha as *const T as *const _,
                    self.a.descr as _,
                    self.b as _,
                    &self.beta as *const T as *const _,
                    self.c,
                    dtype::<T>(),
                    self.alg,
                    self.cs.gpu.ptr(&self.work) as *mut _,
                )
            },
            &format!("SpMM {:?}", self.alg),
        )
    }
}

/// One prepared cuSPARSE SpMV.
pub struct SpmvCall<'a, T> {
    cs: &'a Cusparse,
    a: &'a CsrDescr<T>,
    x: cs::cusparseDnVecDescr_t,
    y: cs::cusparseDnVecDescr_t,
    alg: cs::cusparseSpMVAlg_t,
    alpha: T,
    beta: T,
    work: CudaSlice<u8>,
    _borrow: PhantomData<(&'a CudaSlice<T>, &'a mut CudaSlice<T>)>,
}

impl<T> Drop for SpmvCall<'_, T> {
    fn drop(&mut self) {
        unsafe {
            cs::cusparseDestroyDnVec(self.x);
            cs::cusparseDestroyDnVec(self.y);
        }
    }
}

impl<'a, T: Scalar> SpmvCall<'a, T> {
    /// Prepares `y = alpha * A * x + beta * y` with algorithm `alg`.
    pub fn new(
        cs_: &'a Cusparse,
        a: &'a CsrDescr<T>,
        x: &'a CudaSlice<T>,
        y: &'a mut CudaSlice<T>,
        alpha: T,
        beta: T,
        alg: cs::cusparseSpMVAlg_t,
    ) -> Result<Self> {
        if x.len() < a.ncols || y.len() < a.nrows {
            return Err(Error::invalid("x/y", "vectors are shorter than A's shape"));
        }
        let gpu = &cs_.gpu;
        let vec = |s: &CudaSlice<T>, n: usize| -> Result<cs::cusparseDnVecDescr_t> {
            let mut d = std::ptr::null_mut();
            check(
                unsafe {
                    cs::cusparseCreateDnVec(&mut d, n as i64, gpu.ptr(s) as *mut _, dtype::<T>())
                },
                "cusparseCreateDnVec",
            )?;
            Ok(d)
        };
        let mut call = SpmvCall {
            cs: cs_,
            a,
            x: vec(x, a.ncols)?,
            y: vec(y, a.nrows)?,
            alg,
            alpha,
            beta,
            work: gpu.alloc_zeroed::<u8>(0)?,
            _borrow: PhantomData,
        };
        let op = cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        let mut size = 0usize;
        let r = unsafe {
            cs::cusparseSpMV_bufferSize(
                cs_.handle,
                op,
                &call.alpha as *const T as *const _,
                a.descr as _,
                call.x as _,
                &call.beta as *const T as *const _,
                call.y,
                dtype::<T>(),
                alg,
                &mut size,
            )
        };
        if r != cs::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
            return Err(Error::unsupported(format!("cuSPARSE SpMV {alg:?}: {r:?}")));
        }
        call.work = gpu.alloc_zeroed::<u8>(size)?;
        Ok(call)
    }
}

impl<T: Scalar> Enqueue for SpmvCall<'_, T> {
    fn enqueue(&self) -> Result<()> {
        let op = cs::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        check(
            unsafe {
                cs::cusparseSpMV(
                    self.cs.handle,
                    op,
                    &self.alpha as *const T as *const _,
                    self.a.descr as _,
                    self.x as _,
                    &self.beta as *const T as *const _,
                    self.y,
                    dtype::<T>(),
                    self.alg,
                    self.cs.gpu.ptr(&self.work) as *mut _,
                )
            },
            &format!("SpMV {:?}", self.alg),
        )
    }
}
