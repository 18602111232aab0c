//! `sparrow topk`: the k largest or smallest keys of every segment of a .npy array.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use half::{bf16, f16};
use npyz::NpyFile;
use sparrow::matrix::io::read_npy;
use sparrow::ops::topk::{IndexType, Indices, Key, Segments, TieBreak, TopK};
use sparrow::{Error, Result};

use super::files::Files;

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// Keys: a 2-D array (one segment per row) or a 1-D array with --offsets.
    #[arg(long)]
    keys: PathBuf,
    /// Segment offsets (.npy, int64 or int32, n + 1 entries) for 1-D keys.
    #[arg(long)]
    offsets: Option<PathBuf>,
    /// k for every segment.
    #[arg(short = 'k', long = "k", conflicts_with = "k_per_segment")]
    k: Option<usize>,
    /// One k per segment (.npy, integers).
    #[arg(long)]
    k_per_segment: Option<PathBuf>,
    /// Select the smallest keys instead of the largest.
    #[arg(long)]
    smallest: bool,
    /// Sort each row by key (ties by position).
    #[arg(long)]
    sorted: bool,
    /// fast, smaller-index or larger-index.
    #[arg(long, default_value = "fast")]
    tie_break: String,
    /// Values carried with the keys (.npy, same length as the keys).
    #[arg(long)]
    values: Option<PathBuf>,
    /// i32 or i64 output positions.
    #[arg(long, default_value = "i64")]
    index_type: String,
    /// Key type when the file cannot say: bf16 (stored as uint16).
    #[arg(long)]
    key_type: Option<String>,
    /// Output keys (.npy, segments x width).
    #[arg(long)]
    out_keys: PathBuf,
    /// Output positions (.npy).
    #[arg(long)]
    out_indices: PathBuf,
    /// Output values (.npy), with --values.
    #[arg(long)]
    out_values: Option<PathBuf>,
    /// Output per-segment counts (.npy, int64).
    #[arg(long)]
    out_counts: Option<PathBuf>,
}

/// An array of any key type, with its shape.
enum AnyKeys {
    F32(Vec<f32>),
    F64(Vec<f64>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    U16(Vec<u16>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    U64(Vec<u64>),
}

fn read_any(path: &Path, bf16_from_u16: bool) -> Result<(Vec<u64>, AnyKeys)> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let npy = NpyFile::new(std::io::BufReader::new(f))
        .map_err(|e| Error::format(path, format!("not a valid .npy array: {e}")))?;
    if npy.order() == npyz::Order::Fortran && npy.shape().len() > 1 {
        return Err(Error::format(
            path,
            "Fortran-ordered key arrays are not supported; save with np.ascontiguousarray",
        ));
    }
    let shape = npy.shape().to_vec();
    let ts = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => return Err(Error::format(path, format!("unsupported dtype {other:?}"))),
    };
    // The header's shape may claim more than the file holds: refuse before allocating for it.
    let elem = ts.get(2..).and_then(|w| w.parse::<u64>().ok()).unwrap_or(1);
    let file_len = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    let need = shape
        .iter()
        .try_fold(elem, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::format(path, format!("shape {shape:?} is too large")))?;
    if need > file_len {
        return Err(Error::format(
            path,
            format!("shape {shape:?} needs {need} bytes of elements but the file holds {file_len} bytes"),
        ));
    }
    let bad = |e: std::io::Error| Error::format(path, format!("cannot read the elements: {e}"));
    let keys = match ts.as_str() {
        "<f4" => AnyKeys::F32(npy.into_vec().map_err(bad)?),
        "<f8" => AnyKeys::F64(npy.into_vec().map_err(bad)?),
        "<f2" => AnyKeys::F16(npy.into_vec().map_err(bad)?),
        "|i1" => AnyKeys::I8(npy.into_vec().map_err(bad)?),
        "|u1" => AnyKeys::U8(npy.into_vec().map_err(bad)?),
        "<i2" => AnyKeys::I16(npy.into_vec().map_err(bad)?),
        "<u2" if bf16_from_u16 => AnyKeys::Bf16(npy.into_vec::<u16>().map_err(bad)?.into_iter().map(bf16::from_bits).collect()),
        "<u2" => AnyKeys::U16(npy.into_vec().map_err(bad)?),
        "<i4" => AnyKeys::I32(npy.into_vec().map_err(bad)?),
        "<u4" => AnyKeys::U32(npy.into_vec().map_err(bad)?),
        "<i8" => AnyKeys::I64(npy.into_vec().map_err(bad)?),
        "<u8" => AnyKeys::U64(npy.into_vec().map_err(bad)?),
        other => {
            return Err(Error::format(
                path,
                format!("unsupported dtype {other}; keys and values may be f16, f32, f64, (u)int8/16/32/64, or bf16 stored as uint16 with --key-type bf16"),
            ))
        }
    };
    Ok((shape, keys))
}

/// Values travel as raw bits of their width, so one selection serves every value type.
fn value_bits(v: &AnyKeys) -> Vec<u64> {
    fn b<K: Key>(v: &[K]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }
    match v {
        AnyKeys::F32(x) => b(x),
        AnyKeys::F64(x) => b(x),
        AnyKeys::F16(x) => b(x),
        AnyKeys::Bf16(x) => b(x),
        AnyKeys::I8(x) => b(x),
        AnyKeys::U8(x) => b(x),
        AnyKeys::I16(x) => b(x),
        AnyKeys::U16(x) => b(x),
        AnyKeys::I32(x) => b(x),
        AnyKeys::U32(x) => b(x),
        AnyKeys::I64(x) => b(x),
        AnyKeys::U64(x) => b(x),
    }
}

fn write<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], data: &[T]) -> Result<()> {
    sparrow::matrix::io::write_npy(path, shape, data)
}

fn write_raw(path: &Path, shape: &[u64], bits: &[u64], like: &AnyKeys) -> Result<()> {
    macro_rules! w {
        ($t:ty) => {
            write(
                path,
                shape,
                &bits
                    .iter()
                    .map(|&b| <$t as Key>::from_bits(b))
                    .collect::<Vec<$t>>(),
            )
        };
    }
    match like {
        AnyKeys::F32(_) => w!(f32),
        AnyKeys::F64(_) => w!(f64),
        AnyKeys::F16(_) => w!(f16),
        AnyKeys::Bf16(_) | AnyKeys::U16(_) => w!(u16),
        AnyKeys::I8(_) => w!(i8),
        AnyKeys::U8(_) => w!(u8),
        AnyKeys::I16(_) => w!(i16),
        AnyKeys::I32(_) => w!(i32),
        AnyKeys::U32(_) => w!(u32),
        AnyKeys::I64(_) => w!(i64),
        AnyKeys::U64(_) => w!(u64),
    }
}

/// The tie-break named `s` (`--tie-break`).
pub fn tie_break(s: &str) -> Result<TieBreak> {
    match s {
        "fast" => Ok(TieBreak::Fast),
        "smaller-index" => Ok(TieBreak::SmallerIndex),
        "larger-index" => Ok(TieBreak::LargerIndex),
        other => Err(Error::invalid(
            "--tie-break",
            format!("{other:?} is not fast, smaller-index or larger-index"),
        )),
    }
}

pub fn run(ctx: &super::Ctx, args: Args) -> Result<ExitCode> {
    let tie = tie_break(&args.tie_break)?;
    let index = match args.index_type.as_str() {
        "i32" => IndexType::I32,
        "i64" => IndexType::I64,
        other => {
            return Err(Error::invalid(
                "--index-type",
                format!("{other:?} is not i32 or i64"),
            ))
        }
    };
    let bf16_keys = match args.key_type.as_deref() {
        None => false,
        Some("bf16") => true,
        Some(other) => {
            return Err(Error::invalid(
                "--key-type",
                format!("{other:?}: only bf16 needs saying (stored as uint16)"),
            ))
        }
    };
    if args.values.is_some() != args.out_values.is_some() {
        return Err(Error::invalid(
            "--out-values",
            "--values and --out-values go together",
        ));
    }
    let mut files = Files::check(
        &[
            ("--keys", Some(&args.keys)),
            ("--offsets", args.offsets.as_deref()),
            ("--k-per-segment", args.k_per_segment.as_deref()),
            ("--values", args.values.as_deref()),
        ],
        &[
            ("--out-keys", Some(&args.out_keys)),
            ("--out-indices", Some(&args.out_indices)),
            ("--out-values", args.out_values.as_deref()),
            ("--out-counts", args.out_counts.as_deref()),
        ],
    )?;
    let (shape, keys) = read_any(&args.keys, bf16_keys)?;
    if bf16_keys && !matches!(keys, AnyKeys::Bf16(_)) {
        return Err(Error::invalid(
            "--key-type",
            format!(
                "bf16 applies to keys stored as uint16, but {} holds another type",
                args.keys.display()
            ),
        ));
    }
    let offsets: Option<Vec<i64>> = match &args.offsets {
        Some(p) => Some(read_npy(p)?.data.to_i64(p, "offsets")?),
        None => None,
    };
    let nkeys: u64 = shape.iter().product();
    let (count, len) = match (shape.as_slice(), &offsets) {
        ([r, c], None) => (*r as usize, *c as usize),
        ([_], Some(o)) => (o.len().saturating_sub(1), 0),
        ([_], None) => return Err(Error::invalid("--offsets", "1-D keys need --offsets")),
        ([_, _], Some(_)) => {
            return Err(Error::invalid(
                "--offsets",
                "2-D keys are fixed segments (one per row); give 1-D keys with --offsets",
            ))
        }
        (s, _) => {
            return Err(Error::format(
                &args.keys,
                format!("expected 1-D or 2-D keys, found shape {s:?}"),
            ))
        }
    };
    let segs = match &offsets {
        Some(o) => Segments::Offsets(o),
        None => Segments::Fixed { count, len },
    };
    let base = match (&args.k, &args.k_per_segment) {
        (Some(k), None) => {
            if args.smallest {
                TopK::smallest(*k)
            } else {
                TopK::largest(*k)
            }
        }
        (None, Some(p)) => TopK::per_segment(
            read_npy(p)?.data.to_i64(p, "k per segment")?,
            !args.smallest,
        ),
        _ => return Err(Error::invalid("-k", "give -k K or --k-per-segment KS.npy")),
    };
    let req = base.sorted(args.sorted).tie_break(tie).index_type(index);
    let values = match &args.values {
        Some(p) => Some(read_any(p, false)?),
        None => None,
    };
    if let (Some(p), Some((vshape, _))) = (&args.values, &values) {
        // The keys' shape, or flat in their row-major order; never another 2-D shape.
        let flat = vshape.len() == 1 && vshape[0] == shape.iter().product::<u64>();
        if *vshape != shape && !flat {
            return Err(Error::invalid(
                "--values",
                format!(
                    "{} has shape {vshape:?} but the keys have shape {shape:?}",
                    p.display()
                ),
            ));
        }
    }
    let vbits = values.as_ref().map(|(_, v)| value_bits(v));
    req.layout(nkeys as usize, segs, vbits.as_ref().map(|v| v.len()))?;
    let device = ctx.open_device()?;

    macro_rules! go {
        ($v:expr) => {{
            let (out, plan) = req.run(&device, &$v, segs, vbits.as_deref())?;
            if ctx.explain {
                eprintln!("plan: {plan}");
            }
            let nseg = out.counts.len() as u64;
            let shape = [nseg, out.width as u64];
            write(&files.path("--out-keys"), &shape, &out.keys)?;
            (out.indices, out.values, out.counts, shape)
        }};
    }
    macro_rules! go_bf16 {
        ($v:expr) => {{
            let (out, plan) = req.run(&device, &$v, segs, vbits.as_deref())?;
            if ctx.explain {
                eprintln!("plan: {plan}");
            }
            let shape = [out.counts.len() as u64, out.width as u64];
            write(
                &files.path("--out-keys"),
                &shape,
                &out.keys.iter().map(|k| k.to_bits()).collect::<Vec<u16>>(),
            )?;
            (out.indices, out.values, out.counts, shape)
        }};
    }
    let (indices, vals, counts, shape) = match &keys {
        AnyKeys::F32(v) => go!(v),
        AnyKeys::F64(v) => go!(v),
        AnyKeys::F16(v) => go!(v),
        AnyKeys::Bf16(v) => go_bf16!(v),
        AnyKeys::I8(v) => go!(v),
        AnyKeys::U8(v) => go!(v),
        AnyKeys::I16(v) => go!(v),
        AnyKeys::U16(v) => go!(v),
        AnyKeys::I32(v) => go!(v),
        AnyKeys::U32(v) => go!(v),
        AnyKeys::I64(v) => go!(v),
        AnyKeys::U64(v) => go!(v),
    };
    super::report_compiles(&device);
    let at = files.path("--out-indices");
    match &indices {
        Indices::I32(v) => write(&at, &shape, v)?,
        Indices::I64(v) => write(&at, &shape, v)?,
    }
    if let (Some(_), Some(bits), Some((_, like))) = (&args.out_values, &vals, &values) {
        write_raw(&files.path("--out-values"), &shape, bits, like)?;
    }
    if args.out_counts.is_some() {
        write(&files.path("--out-counts"), &[counts.len() as u64], &counts)?;
    }
    files.commit()?;
    if ctx.json {
        println!(
            "{}",
            serde_json::json!({"segments": shape[0], "width": shape[1], "keys": nkeys, "out_keys": args.out_keys.display().to_string()})
        );
    } else {
        println!(
            "topk: {} segment(s) x {} from {nkeys} keys; wrote {}",
            shape[0],
            shape[1],
            args.out_keys.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
