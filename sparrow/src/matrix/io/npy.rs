//! `.npy` arrays: read any of the supported dtypes into a tagged array, write any of them.
//!
//! The header is parsed here rather than by npyz: its reader takes the header's length and
//! shape on trust (a 4 GiB header buffer, a shape product that overflows), so a few wrong
//! bytes could allocate without bound or panic. Here every size is checked against the bytes
//! the file holds and the memory the machine has before anything is allocated.

use std::io::{Read, Write};
use std::path::Path;

use npyz::WriterBuilder;

use crate::matrix::Dense;
use crate::{memory, Error, Result, Scalar};

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
    /// The elements as `T`. Floats of the same width pass as they are and float32 widens to
    /// f64 exactly; integers pass when every value converts exactly. float64 asked for as f32
    /// is refused rather than silently rounded.
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
            // Every f32 is an f64: widening is exact, for either target.
            (NpyData::F32(v), _) => Ok(v.iter().map(|&x| T::from_f64(x as f64)).collect()),
            (NpyData::F64(v), "f64") => Ok(v.iter().map(|&x| T::from_f64(x)).collect()),
            (NpyData::I32(v), _) => v.iter().map(|&x| exact(x as f64, path, what)).collect(),
            (NpyData::U32(v), _) => v.iter().map(|&x| exact(x as f64, path, what)).collect(),
            (NpyData::I64(v), _) => v
                .iter()
                .map(|&x| {
                    // i64::MAX as f64 rounds up to 2^63, which saturates back: compare in i128.
                    if (x as f64) as i128 != x as i128 {
                        return Err(Error::format(
                            path,
                            format!("{what} holds {x}, too large to convert exactly"),
                        ));
                    }
                    exact(x as f64, path, what)
                })
                .collect(),
            (NpyData::F64(_), name) => Err(Error::format(
                path,
                format!(
                    "{what} holds {}; reading it as {} would round it",
                    self.dtype_name(),
                    float_name(name)
                ),
            )),
        }
    }
}

/// numpy's name of a sparrow value type.
fn float_name(name: &str) -> &str {
    match name {
        "f32" => "float32",
        "f64" => "float64",
        other => other,
    }
}

/// The largest header sparrow reads. numpy refuses headers over 10,000 bytes unless told
/// otherwise; a header longer than this is not one numpy wrote.
const MAX_HEADER: usize = 1 << 20;

/// Bytes of data read at a time; also the most reserved up front for a reader whose length
/// is not known to hold the data.
const CHUNK_BYTES: usize = 1 << 16;

/// The element types sparrow reads, by their numpy type strings.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Elem {
    F32,
    F64,
    I32,
    I64,
    U32,
}

impl Elem {
    fn of(descr: &str) -> Option<Elem> {
        Some(match descr {
            "<f4" => Elem::F32,
            "<f8" => Elem::F64,
            "<i4" => Elem::I32,
            "<i8" => Elem::I64,
            "<u4" => Elem::U32,
            _ => return None,
        })
    }
    fn size(self) -> usize {
        match self {
            Elem::F32 | Elem::I32 | Elem::U32 => 4,
            Elem::F64 | Elem::I64 => 8,
        }
    }
}

/// What a `.npy` header declares.
pub(super) struct Header {
    /// The type string; `None` for a structured (record) dtype.
    pub descr: Option<String>,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran: bool,
    /// The shape.
    pub shape: Vec<u64>,
    /// Bytes before the data: magic, version, length and header text.
    pub bytes: u64,
}

impl Header {
    fn elem(&self, path: &Path) -> Result<Elem> {
        self.descr.as_deref().and_then(Elem::of).ok_or_else(|| {
            Error::format(
                path,
                format!(
                    "unsupported dtype {}; sparrow reads float32, float64, int32, int64 and uint32 (little-endian)",
                    self.descr.as_deref().unwrap_or("(a structured record type)")
                ),
            )
        })
    }

    /// `Some("f32")` or `Some("f64")` for float arrays, `None` for integer arrays; an
    /// unsupported dtype is the error a read would give.
    pub(super) fn value_dtype(&self, path: &Path) -> Result<Option<&'static str>> {
        Ok(match self.elem(path)? {
            Elem::F32 => Some("f32"),
            Elem::F64 => Some("f64"),
            Elem::I32 | Elem::I64 | Elem::U32 => None,
        })
    }
}

fn not_npy(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::format(path, format!("not a valid .npy array: {why}"))
}

fn truncated_header(path: &Path) -> Error {
    Error::format(path, "file is truncated: it ends inside its header")
}

/// The length of a file, when it is a regular file (a pipe or device says nothing).
pub(super) fn file_len(f: &std::fs::File) -> Option<u64> {
    f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len())
}

/// Reads and checks a `.npy` header, leaving `r` at the first data byte. `total`, when
/// known, is the length of the whole array's bytes, header included.
pub(super) fn read_header(r: &mut impl Read, path: &Path, total: Option<u64>) -> Result<Header> {
    let mut pre = [0u8; 8];
    let whole = read_full(r, &mut pre).map_err(|e| data_error(path, e))?;
    if !whole || &pre[..6] != b"\x93NUMPY" {
        return Err(not_npy(path, "it does not start with the .npy magic bytes"));
    }
    let (len_bytes, len) = match (pre[6], pre[7]) {
        (1, 0) => {
            let mut b = [0u8; 2];
            if !read_full(r, &mut b).map_err(|e| data_error(path, e))? {
                return Err(truncated_header(path));
            }
            (2u64, u16::from_le_bytes(b) as usize)
        }
        (2, 0) | (3, 0) => {
            let mut b = [0u8; 4];
            if !read_full(r, &mut b).map_err(|e| data_error(path, e))? {
                return Err(truncated_header(path));
            }
            (4u64, u32::from_le_bytes(b) as usize)
        }
        (major, minor) => {
            return Err(not_npy(
                path,
                format!("format version {major}.{minor} is not one sparrow reads (1.0, 2.0, 3.0)"),
            ))
        }
    };
    if len > MAX_HEADER {
        return Err(not_npy(
            path,
            format!("its header claims {len} bytes, more than the {MAX_HEADER} sparrow reads"),
        ));
    }
    let bytes = 8 + len_bytes + len as u64;
    if total.is_some_and(|t| bytes > t) {
        return Err(truncated_header(path));
    }
    let mut text = Vec::new();
    r.take(len as u64)
        .read_to_end(&mut text)
        .map_err(|e| data_error(path, e))?;
    if text.len() < len {
        return Err(truncated_header(path));
    }
    let text = std::str::from_utf8(&text).map_err(|_| not_npy(path, "its header is not text"))?;
    let dict = parse_header_dict(text).map_err(|why| not_npy(path, format!("header: {why}")))?;
    Ok(Header {
        descr: dict.descr,
        fortran: dict.fortran,
        shape: dict.shape,
        bytes,
    })
}

/// Fills `buf`, answering false when the reader ends first.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    match r.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

fn data_error(path: &Path, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        Error::format(path, "file is truncated: it ends before all its elements")
    } else {
        not_npy(path, e)
    }
}

struct HeaderDict {
    descr: Option<String>,
    fortran: bool,
    shape: Vec<u64>,
}

/// A Python literal, as far as `.npy` headers use them.
enum Lit {
    Str(String),
    /// `None` for a negative integer or one past u64.
    Int(Option<u64>),
    Bool(bool),
    Nothing,
    Seq(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

/// Deepest nesting of tuples, lists and dicts a header may use (numpy's own use 3 or so).
const MAX_DEPTH: usize = 32;

struct LitParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl LitParser<'_> {
    fn ws(&mut self) {
        while self
            .s
            .get(self.i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn value(&mut self, depth: usize) -> std::result::Result<Lit, String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} levels deep"));
        }
        self.ws();
        match self.peek() {
            None => Err("it ends inside a value".into()),
            Some(b'{') => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        break;
                    }
                    let k = self.value(depth + 1)?;
                    self.ws();
                    if self.peek() != Some(b':') {
                        return Err(format!("expected ':' at byte {}", self.i));
                    }
                    self.i += 1;
                    let v = self.value(depth + 1)?;
                    items.push((k, v));
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            break;
                        }
                        _ => return Err(format!("expected ',' or '}}' at byte {}", self.i)),
                    }
                }
                Ok(Lit::Dict(items))
            }
            Some(open @ (b'(' | b'[')) => {
                let close = if open == b'(' { b')' } else { b']' };
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    if self.peek() == Some(close) {
                        self.i += 1;
                        break;
                    }
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(c) if c == close => {
                            self.i += 1;
                            break;
                        }
                        _ => {
                            return Err(format!(
                                "expected ',' or '{}' at byte {}",
                                close as char, self.i
                            ))
                        }
                    }
                }
                Ok(Lit::Seq(items))
            }
            Some(q @ (b'\'' | b'"')) => {
                self.i += 1;
                let mut out = Vec::new();
                loop {
                    match self.peek() {
                        None => return Err("a string is not closed".into()),
                        Some(b'\\') => {
                            let c = self
                                .s
                                .get(self.i + 1)
                                .copied()
                                .ok_or("a string is not closed")?;
                            out.push(c);
                            self.i += 2;
                        }
                        Some(c) if c == q => {
                            self.i += 1;
                            break;
                        }
                        Some(c) => {
                            out.push(c);
                            self.i += 1;
                        }
                    }
                }
                Ok(Lit::Str(String::from_utf8_lossy(&out).into_owned()))
            }
            Some(c) if c.is_ascii_digit() || c == b'-' || c == b'+' => {
                let negative = c == b'-';
                if c == b'-' || c == b'+' {
                    self.i += 1;
                }
                let start = self.i;
                let mut v: Option<u64> = Some(0);
                while let Some(d) = self.peek().filter(u8::is_ascii_digit) {
                    v = v
                        .and_then(|v| v.checked_mul(10))
                        .and_then(|v| v.checked_add((d - b'0') as u64));
                    self.i += 1;
                }
                if self.i == start {
                    return Err(format!("expected digits at byte {start}"));
                }
                if matches!(self.peek(), Some(b'L' | b'l')) {
                    self.i += 1;
                }
                Ok(Lit::Int(if negative && v != Some(0) { None } else { v }))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.i;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    self.i += 1;
                }
                match &self.s[start..self.i] {
                    b"True" => Ok(Lit::Bool(true)),
                    b"False" => Ok(Lit::Bool(false)),
                    b"None" => Ok(Lit::Nothing),
                    other => Err(format!(
                        "unexpected word {:?}",
                        String::from_utf8_lossy(&other[..other.len().min(40)])
                    )),
                }
            }
            Some(c) => Err(format!("unexpected {:?} at byte {}", c as char, self.i)),
        }
    }
}

fn parse_header_dict(text: &str) -> std::result::Result<HeaderDict, String> {
    let mut p = LitParser {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("unexpected text after the dict at byte {}", p.i));
    }
    let Lit::Dict(items) = v else {
        return Err("it is not a dict".into());
    };
    let get = |key: &str| {
        items.iter().find_map(|(k, v)| match k {
            Lit::Str(s) if s == key => Some(v),
            _ => None,
        })
    };
    let descr = match get("descr").ok_or("it has no 'descr'")? {
        Lit::Str(s) => Some(s.clone()),
        _ => None,
    };
    let fortran = match get("fortran_order").ok_or("it has no 'fortran_order'")? {
        Lit::Bool(b) => *b,
        _ => return Err("'fortran_order' is not True or False".into()),
    };
    let shape = match get("shape").ok_or("it has no 'shape'")? {
        Lit::Seq(dims) => dims
            .iter()
            .map(|d| match d {
                Lit::Int(Some(n)) => Ok(*n),
                Lit::Int(None) => Err("'shape' holds a negative or overlong size".to_string()),
                _ => Err("'shape' holds something other than integers".to_string()),
            })
            .collect::<std::result::Result<Vec<u64>, String>>()?,
        _ => return Err("'shape' is not a tuple".into()),
    };
    Ok(HeaderDict {
        descr,
        fortran,
        shape,
    })
}

/// What a TooLarge error calls the array of `path`.
fn array_what(path: &Path) -> String {
    format!("the array in {}", path.display())
}

/// Bytes of data `h` declares for elements of `size` bytes: an overflowing shape is
/// [`Error::TooLarge`], more than the `total` bytes hold is a truncated file, more than the
/// machine holds is [`Error::TooLarge`].
fn data_bytes(h: &Header, size: usize, path: &Path, total: Option<u64>) -> Result<u64> {
    let what = array_what(path);
    let dims: Vec<usize> = h
        .shape
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
        .collect();
    let bytes = memory::bytes_of(&what, &dims, size)?;
    if let Some(t) = total {
        let left = t.saturating_sub(h.bytes);
        if bytes > left {
            return Err(Error::format(
                path,
                format!(
                    "file is truncated: it ends before all its elements (shape {:?} needs {bytes} bytes of data, {left} follow the header)",
                    h.shape
                ),
            ));
        }
    }
    memory::ensure_fits(&what, bytes)?;
    Ok(bytes)
}

/// Reads `n` little-endian elements of `N` bytes, reserving `reserve` up front and growing
/// only as the bytes arrive, so a reader that ends early never costs more than it held.
fn read_elems<X, const N: usize>(
    r: &mut impl Read,
    path: &Path,
    n: usize,
    reserve: usize,
    conv: fn([u8; N]) -> X,
) -> Result<Vec<X>> {
    let refused = || Error::TooLarge {
        what: array_what(path),
        needed: (n as u64).saturating_mul(N as u64),
        limit: "the allocator refused it".to_string(),
    };
    let mut v: Vec<X> = Vec::new();
    v.try_reserve_exact(reserve).map_err(|_| refused())?;
    let per = CHUNK_BYTES / N;
    let mut buf = vec![0u8; n.min(per) * N];
    let mut left = n;
    while left > 0 {
        let k = left.min(per);
        let bytes = &mut buf[..k * N];
        r.read_exact(bytes).map_err(|e| data_error(path, e))?;
        v.try_reserve(k).map_err(|_| refused())?;
        v.extend(bytes.chunks_exact(N).map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            conv(a)
        }));
        left -= k;
    }
    Ok(v)
}

/// Reads an array from `reader`. `total`, when known, is the number of bytes the array may
/// take, header included; `trusted` says that those bytes exist (a regular file's length), so
/// the whole array may be reserved at once; otherwise memory grows as data arrives.
pub(super) fn read_npy_limited(
    mut reader: impl Read,
    path: &Path,
    total: Option<u64>,
    trusted: bool,
) -> Result<NpyArray> {
    let h = read_header(&mut reader, path, total)?;
    let elem = h.elem(path)?;
    if h.fortran && h.shape.len() > 2 {
        return Err(Error::format(
            path,
            "Fortran-ordered arrays of more than 2 dimensions are not supported",
        ));
    }
    let size = elem.size();
    let n = (data_bytes(&h, size, path, total)? / size as u64) as usize;
    let reserve = if trusted && total.is_some() {
        n
    } else {
        n.min(CHUNK_BYTES / size)
    };
    let r = &mut reader;
    let data = match elem {
        Elem::F32 => NpyData::F32(read_elems(r, path, n, reserve, f32::from_le_bytes)?),
        Elem::F64 => NpyData::F64(read_elems(r, path, n, reserve, f64::from_le_bytes)?),
        Elem::I32 => NpyData::I32(read_elems(r, path, n, reserve, i32::from_le_bytes)?),
        Elem::I64 => NpyData::I64(read_elems(r, path, n, reserve, i64::from_le_bytes)?),
        Elem::U32 => NpyData::U32(read_elems(r, path, n, reserve, u32::from_le_bytes)?),
    };
    let arr = NpyArray {
        shape: h.shape,
        data,
    };
    if h.fortran && arr.shape.len() == 2 {
        return transpose_fortran(arr, path);
    }
    Ok(arr)
}

/// Reads a one-element byte string (`|S<k>`) or unicode string (`<U<k>`) array, as scipy
/// stores the matrix format; an empty array reads as "".
pub(super) fn read_npy_text(
    mut reader: impl Read,
    path: &Path,
    total: Option<u64>,
) -> Result<String> {
    const MAX_TEXT: usize = 1 << 12;
    let h = read_header(&mut reader, path, total)?;
    let descr = h.descr.clone().unwrap_or_default();
    let (unicode, count) =
        if let Some(k) = descr.strip_prefix("|S").or_else(|| descr.strip_prefix("S")) {
            (false, k)
        } else if let Some(k) = descr.strip_prefix("<U") {
            (true, k)
        } else {
            return Err(Error::format(
                path,
                format!("dtype {descr:?} is not a byte string"),
            ));
        };
    let k: usize = count
        .parse()
        .ok()
        .filter(|&k| k <= MAX_TEXT)
        .ok_or_else(|| Error::format(path, format!("dtype {descr:?} is not a short string")))?;
    let size = if unicode { 4 * k } else { k };
    if size == 0 {
        return Ok(String::new());
    }
    if data_bytes(&h, size, path, total)? == 0 {
        return Ok(String::new());
    }
    let mut buf = vec![0u8; size];
    reader
        .read_exact(&mut buf)
        .map_err(|e| data_error(path, e))?;
    let s = if unicode {
        buf.chunks_exact(4)
            .map(|c| {
                char::from_u32(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .unwrap_or(char::REPLACEMENT_CHARACTER)
            })
            .collect()
    } else {
        String::from_utf8_lossy(&buf).into_owned()
    };
    Ok(s.trim_end_matches('\0').to_string())
}

fn transpose_fortran(arr: NpyArray, path: &Path) -> Result<NpyArray> {
    let (r, c) = (arr.shape[0] as usize, arr.shape[1] as usize);
    fn t<X: Copy>(v: Vec<X>, r: usize, c: usize, path: &Path) -> Result<Vec<X>> {
        // An empty array needs no copy, and a shape such as (10^12, 0) would loop over its rows.
        if v.is_empty() {
            return Ok(v);
        }
        let mut out = Vec::new();
        out.try_reserve_exact(v.len())
            .map_err(|_| Error::TooLarge {
                what: array_what(path),
                needed: (v.len() * std::mem::size_of::<X>()) as u64,
                limit: "the allocator refused its transposed copy".to_string(),
            })?;
        for i in 0..r {
            for j in 0..c {
                out.push(v[j * r + i]);
            }
        }
        Ok(out)
    }
    let data = match arr.data {
        NpyData::F32(v) => NpyData::F32(t(v, r, c, path)?),
        NpyData::F64(v) => NpyData::F64(t(v, r, c, path)?),
        NpyData::I32(v) => NpyData::I32(t(v, r, c, path)?),
        NpyData::I64(v) => NpyData::I64(t(v, r, c, path)?),
        NpyData::U32(v) => NpyData::U32(t(v, r, c, path)?),
    };
    Ok(NpyArray {
        shape: arr.shape,
        data,
    })
}

/// Reads an array from any reader holding `.npy` bytes; `path` names it in errors. The
/// reader's length is not known, so memory grows only as the data arrives.
pub fn read_npy_from(reader: impl Read, path: &Path) -> Result<NpyArray> {
    read_npy_limited(reader, path, None, false)
}

/// Reads a `.npy` file. Its shape is checked against the file's length before any element
/// is allocated.
pub fn read_npy(path: impl AsRef<Path>) -> Result<NpyArray> {
    let path = path.as_ref();
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let total = file_len(&f);
    read_npy_limited(std::io::BufReader::new(f), path, total, true)
}

/// The value type a `.npy` file holds, from its header alone: `Some("f32")` for float32,
/// `Some("f64")` for float64, `None` for the integer types (which convert to either). A
/// dtype sparrow does not read is the error reading it would give.
pub fn dense_value_dtype(path: impl AsRef<Path>) -> Result<Option<&'static str>> {
    let path = path.as_ref();
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let total = file_len(&f);
    read_header(&mut std::io::BufReader::new(f), path, total)?.value_dtype(path)
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

/// Writes a `.npy` file atomically (see [`write_atomic`](super::write_atomic)): a failed
/// write leaves any earlier file as it was.
pub fn write_npy<X: npyz::AutoSerialize + Copy>(
    path: impl AsRef<Path>,
    shape: &[u64],
    data: &[X],
) -> Result<()> {
    super::write_atomic(path.as_ref(), |w| write_npy_to(w, shape, data))
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

/// Writes a dense matrix as a packed 2-D array, atomically.
pub fn write_dense<T: Scalar>(path: impl AsRef<Path>, m: &Dense<T>) -> Result<()> {
    let p = m.to_packed();
    write_npy(path, &[m.nrows() as u64, m.ncols() as u64], p.data())
}
