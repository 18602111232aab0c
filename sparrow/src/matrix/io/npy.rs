//! `.npy` arrays: read any of the supported dtypes into a tagged array, write any of them.

use std::io::{Read, Write};
use std::path::Path;

use npyz::WriterBuilder;
use npyz::{DType, NpyFile, Order};

use crate::matrix::Dense;
use crate::{Error, Result, Scalar};

/// The element types sparrow reads and writes in `.npy` files.
#[derive(Clone, Debug, PartialEq)]
pub enum NpyData {
    /// `<f4`
    F32(Vec<f32>),
    /// `<f8`
    F64(Vec<f64>),
    /// `<i4`
    I32(Vec<i32>),
    /// `<i8`
    I64(Vec<i64>),
    /// `<u4`
    U32(Vec<u32>),
}

/// An array read from a `.npy` file, in C (row-major) order.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// The shape as stored.
    pub shape: Vec<u64>,
    /// The elements, row-major.
    pub data: NpyData,
}

impl NpyData {
    /// The numpy name of the element type.
    pub fn dtype_name(&self) -> &'static str {
        match self {
            NpyData::F32(_) => "float32",
            NpyData::F64(_) => "float64",
            NpyData::I32(_) => "int32",
            NpyData::I64(_) => "int64",
            NpyData::U32(_) => "uint32",
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            NpyData::F32(v) => v.len(),
            NpyData::F64(v) => v.len(),
            NpyData::I32(v) => v.len(),
            NpyData::I64(v) => v.len(),
            NpyData::U32(v) => v.len(),
        }
    }
    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The elements as i64, for index arrays; floats are refused.
    pub fn to_i64(&self, path: &Path, what: &str) -> Result<Vec<i64>> {
        match self {
            NpyData::I32(v) => Ok(v.iter().map(|&x| x as i64).collect()),
            NpyData::I64(v) => Ok(v.clone()),
            NpyData::U32(v) => Ok(v.iter().map(|&x| x as i64).collect()),
            _ => Err(Error::format(
                path,
                format!(
                    "{what} has dtype {}, expected an integer type",
                    self.dtype_name()
                ),
            )),
        }
    }
    /// The elements as `T`. Same-type floats pass as they are; integers pass when every value
    /// converts exactly; a float of the other width is refused rather than silently rounded.
    pub fn to_scalar<T: Scalar>(&self, path: &Path, what: &str) -> Result<Vec<T>> {
        fn exact<T: Scalar>(x: f64, path: &Path, what: &str) -> Result<T> {
            let t = T::from_f64(x);
            if t.to_f64() != x {
                return Err(Error::format(
                    path,
                    format!(
                        "{what} holds {x}, which {} cannot represent exactly",
                        T::NAME
                    ),
                ));
            }
            Ok(t)
        }
        match (self, T::NAME) {
            (NpyData::F32(v), "f32") => Ok(v.iter().map(|&x| T::from_f64(x as f64)).collect()),
            (NpyData::F64(v), "f64") => Ok(v.iter().map(|&x| T::from_f64(x)).collect()),
            (NpyData::I32(v), _) => v.iter().map(|&x| exact(x as f64, path, what)).collect(),
            (NpyData::U32(v), _) => v.iter().map(|&x| exact(x as f64, path, what)).collect(),
            (NpyData::I64(v), _) => v
                .iter()
                .map(|&x| {
                    if (x as f64) as i64 != x {
                        return Err(Error::format(path, format!("{what} holds {x}, too large to convert exactly")));
                    }
                    exact(x as f64, path, what)
                })
                .collect(),
            _ => Err(Error::format(
                path,
                format!(
                    "{what} has dtype {}, but {} was asked for; convert the file or choose --dtype {}",
                    self.dtype_name(),
                    T::NAME,
                    if T::NAME == "f32" { "f64" } else { "f32" }
                ),
            )),
        }
    }
}

fn type_str(dtype: &DType) -> String {
    match dtype {
        DType::Plain(ts) => ts.to_string(),
        other => format!("{other:?}"),
    }
}

fn eof_as_truncated(path: &Path, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        Error::format(path, "file is truncated: it ends before all its elements")
    } else {
        Error::format(path, format!("not a valid .npy array: {e}"))
    }
}

/// Reads an array from any reader holding `.npy` bytes; `path` names it in errors.
pub fn read_npy_from(reader: impl Read, path: &Path) -> Result<NpyArray> {
    let npy = NpyFile::new(reader).map_err(|e| eof_as_truncated(path, e))?;
    let shape = npy.shape().to_vec();
    let order = npy.order();
    let ts = type_str(&npy.dtype());
    let data = match ts.as_str() {
        "<f4" => NpyData::F32(npy.into_vec().map_err(|e| eof_as_truncated(path, e))?),
        "<f8" => NpyData::F64(npy.into_vec().map_err(|e| eof_as_truncated(path, e))?),
        "<i4" => NpyData::I32(npy.into_vec().map_err(|e| eof_as_truncated(path, e))?),
        "<i8" => NpyData::I64(npy.into_vec().map_err(|e| eof_as_truncated(path, e))?),
        "<u4" => NpyData::U32(npy.into_vec().map_err(|e| eof_as_truncated(path, e))?),
        other => {
            return Err(Error::format(
                path,
                format!("unsupported dtype {other}; sparrow reads float32, float64, int32, int64 and uint32 (little-endian)"),
            ))
        }
    };
    let mut arr = NpyArray { shape, data };
    if order == Order::Fortran && arr.shape.len() == 2 {
        arr = transpose_fortran(arr);
    } else if order == Order::Fortran && arr.shape.len() > 2 {
        return Err(Error::format(
            path,
            "Fortran-ordered arrays of more than 2 dimensions are not supported",
        ));
    }
    Ok(arr)
}

fn transpose_fortran(arr: NpyArray) -> NpyArray {
    let (r, c) = (arr.shape[0] as usize, arr.shape[1] as usize);
    fn t<X: Copy>(v: Vec<X>, r: usize, c: usize) -> Vec<X> {
        let mut out = Vec::with_capacity(v.len());
        for i in 0..r {
            for j in 0..c {
                out.push(v[j * r + i]);
            }
        }
        out
    }
    let data = match arr.data {
        NpyData::F32(v) => NpyData::F32(t(v, r, c)),
        NpyData::F64(v) => NpyData::F64(t(v, r, c)),
        NpyData::I32(v) => NpyData::I32(t(v, r, c)),
        NpyData::I64(v) => NpyData::I64(t(v, r, c)),
        NpyData::U32(v) => NpyData::U32(t(v, r, c)),
    };
    NpyArray {
        shape: arr.shape,
        data,
    }
}

/// Reads a `.npy` file.
pub fn read_npy(path: impl AsRef<Path>) -> Result<NpyArray> {
    let path = path.as_ref();
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    read_npy_from(std::io::BufReader::new(f), path)
}

/// Writes `data` with `shape` as `.npy` bytes into `w`.
pub fn write_npy_to<X: npyz::AutoSerialize + Copy>(
    w: impl Write,
    shape: &[u64],
    data: &[X],
) -> std::io::Result<()> {
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(w)
        .begin_nd()?;
    writer.extend(data.iter().copied())?;
    writer.finish()
}

/// Writes a `.npy` file.
pub fn write_npy<X: npyz::AutoSerialize + Copy>(
    path: impl AsRef<Path>,
    shape: &[u64],
    data: &[X],
) -> Result<()> {
    let path = path.as_ref();
    let f = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut bw = std::io::BufWriter::new(f);
    write_npy_to(&mut bw, shape, data).map_err(|e| Error::io(path, e))?;
    bw.flush().map_err(|e| Error::io(path, e))
}

/// Reads a dense matrix: a 2-D array, or a 1-D array as one column.
pub fn read_dense<T: Scalar>(path: impl AsRef<Path>) -> Result<Dense<T>> {
    let path = path.as_ref();
    let arr = read_npy(path)?;
    let (r, c) = match arr.shape.as_slice() {
        [n] => (*n as usize, 1),
        [r, c] => (*r as usize, *c as usize),
        s => {
            return Err(Error::format(
                path,
                format!("expected a 1-D or 2-D array, found shape {s:?}"),
            ))
        }
    };
    let data = arr.data.to_scalar::<T>(path, "the array")?;
    Dense::from_rows(r, c, data).map_err(|e| Error::format(path, e.to_string()))
}

/// Writes a dense matrix as a packed 2-D array.
pub fn write_dense<T: Scalar>(path: impl AsRef<Path>, m: &Dense<T>) -> Result<()> {
    let p = m.to_packed();
    write_npy(path, &[m.nrows() as u64, m.ncols() as u64], p.data())
}
