"""Recognising numpy, torch and CuPy arrays, and moving results back into the caller's kind.

sparrow reads every array through DLPack; this module only decides which path a call takes
and hands back results as the same kind of array the caller gave, on the same device.
"""

import sys

import numpy as np

_BF16_NAMES = ("bfloat16",)


def torch_module():
    """torch, if the caller has imported it (sparrow never imports it itself)."""
    return sys.modules.get("torch")


def cupy_module():
    """CuPy, if the caller has imported it."""
    return sys.modules.get("cupy")


def kind(x):
    """'torch', 'cupy' or 'numpy' (anything numpy can read as an array)."""
    torch = torch_module()
    if torch is not None and isinstance(x, torch.Tensor):
        return "torch"
    cupy = cupy_module()
    if cupy is not None and isinstance(x, cupy.ndarray):
        return "cupy"
    return "numpy"


def cuda_index(x):
    """The CUDA device index of a torch tensor or CuPy array on a GPU, else None."""
    k = kind(x)
    if k == "torch":
        return x.device.index if x.device.type == "cuda" else None
    if k == "cupy":
        return int(x.device.id)
    if type(x).__module__.startswith("cupyx"):  # a cupyx.scipy.sparse matrix
        return int(x.data.device.id)
    return None


def current_stream(x):
    """The raw CUDA stream the producer of a GPU array works on now (torch's or CuPy's
    current stream for its device)."""
    if kind(x) == "torch":
        torch = torch_module()
        return int(torch.cuda.current_stream(x.device).cuda_stream)
    cupy = cupy_module()
    with cupy.cuda.Device(x.device.id):
        return int(cupy.cuda.get_current_stream().ptr)


def host_array(x, arg):
    """A numpy view (or copy) of a host array, with torch CPU tensors read without a copy.
    bfloat16 (torch's or ml_dtypes') comes back as uint16 with the flag set."""
    if kind(x) == "torch":
        torch = torch_module()
        if x.device.type != "cpu":
            raise ValueError(f"invalid argument `{arg}`: a torch tensor on {x.device} where a host array was needed")
        t = x.detach()
        if t.dtype == torch.bfloat16:
            return t.contiguous().view(torch.int16).numpy().view(np.uint16), True
        return t.contiguous().numpy(), False
    if kind(x) == "cupy":
        raise ValueError(f"invalid argument `{arg}`: a CuPy array where a host array was needed")
    a = np.asarray(x)
    if a.dtype.name in _BF16_NAMES:
        return np.ascontiguousarray(a).view(np.uint16), True
    return a, False


def like(template, a, bf16_dtype=None):
    """`a` (numpy) as the kind of array `template` is: a torch CPU tensor for a torch one."""
    if kind(template) == "torch":
        torch = torch_module()
        if bf16_dtype is not None:
            return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(a)
    if bf16_dtype is not None:
        return a.view(bf16_dtype)
    return a


def check_int(v, arg, low=0, high=2**63 - 1):
    """`v` as an int in low..=high, else a ValueError naming `arg` (bools and floats refused)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"invalid argument `{arg}`: {v!r} is not an integer")
    if not low <= int(v) <= high:
        raise ValueError(f"invalid argument `{arg}`: {v} is not in {low}..={high}")
    return int(v)


def int_array(v, arg):
    """A 1-D int64 array of integral values, else a ValueError naming `arg`."""
    a = np.asarray(v)
    if a.dtype.kind not in "iu" and not (a.dtype.kind == "f" and np.all(np.floor(a) == a)) and a.size:
        raise ValueError(f"invalid argument `{arg}`: holds {a.dtype} values, not integers")
    if a.dtype.kind == "f" and a.size and not np.all(np.floor(a) == a):
        raise ValueError(f"invalid argument `{arg}`: holds non-integral values")
    if a.dtype.kind == "u" and a.size and a.max() > 2**63 - 1:
        raise ValueError(f"invalid argument `{arg}`: values pass 2^63 - 1")
    return np.ascontiguousarray(a.reshape(-1) if a.ndim <= 1 else a, dtype=np.int64)


def stream_handle(stream):
    """A raw CUDA stream from an int, a torch.cuda.Stream or a CuPy Stream (None stays None)."""
    if stream is None:
        return None
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)) or stream < 0:
        raise ValueError(f"invalid argument `stream`: {stream!r} is not a CUDA stream handle")
    return int(stream)


def device_index(device, arg="device"):
    """The CUDA index "cuda" or "cuda:N" names (a torch.device too); None for "cpu"/None."""
    torch = torch_module()
    if torch is not None and isinstance(device, torch.device):
        return None if device.type == "cpu" else (device.index or 0)
    if device is None or device == "cpu":
        return None
    if device == "cuda":
        return 0
    if isinstance(device, str) and device.startswith("cuda:") and device[5:].isdigit():
        return int(device[5:])
    raise ValueError(f"invalid argument `{arg}`: {device!r} is not None, 'cpu', 'cuda' or 'cuda:N'")


def from_bytes(buf, dtype, shape):
    """A writable numpy array over a bytearray the extension returned (no copy)."""
    return np.frombuffer(buf, dtype=dtype).reshape(shape)


def check_device(device):
    """The extension's spelling of `device`: None means the array's own device for GPU
    arrays, else the first usable GPU or the CPU ("auto")."""
    if device is None:
        return "auto"
    if not isinstance(device, str):
        torch = torch_module()
        if torch is not None and isinstance(device, torch.device):
            return "cpu" if device.type == "cpu" else f"cuda:{device.index or 0}"
        raise ValueError(f"invalid argument `device`: {device!r} is not None, 'cpu', 'cuda' or 'cuda:N'")
    return device
