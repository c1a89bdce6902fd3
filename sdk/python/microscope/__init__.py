"""microscope probes for Python: zones, marks, labels and counters that
`microscope record --probes` puts on the same timeline as the samples.

    import microscope

    with microscope.zone("load"):          # a zone of the code inside
        ...

    @microscope.zone("handle")             # a zone of each call
    def handle(request): ...

    microscope.mark("frame done")          # an instant
    microscope.label("route", "/users")    # the thread's value of a key, until changed
    microscope.clear_label("route")
    microscope.counter("queue depth", 17)  # a value over time
    microscope.trace_calls()               # a zone for every Python function called

Each zone, mark, label and counter is a site of the native library
(libmicroscope.so, built from sdk/c/microscope.h), defined the first time
it runs, keyed by its name and the caller's file and line. Without the
library, or with no recorder listening, every call does nothing (cheaply:
a site no recorder enabled costs a check of one byte).

The library is looked up in $MICROSCOPE_LIBRARY, beside this package, then
where the system keeps libraries. `microscope.available` says whether it
was found; `microscope.recording()` whether a recorder listens now.
"""
import ctypes
import ctypes.util
import functools
import os
import sys
import threading

__all__ = ["zone", "mark", "label", "clear_label", "counter", "trace_calls", "recording",
           "available"]

_ZONE, _MARK, _LABEL, _COUNTER = 1, 2, 3, 4
_ENABLED_AT = 5  # the site's enabled byte (struct microscope_site)


def _load():
    names = []
    if os.environ.get("MICROSCOPE_LIBRARY"):
        names.append(os.environ["MICROSCOPE_LIBRARY"])
    names.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "libmicroscope.so"))
    found = ctypes.util.find_library("microscope")
    if found:
        names.append(found)
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            if lib.microscope_lib_abi_version() != 1:
                continue
        except AttributeError:
            continue
        site = ctypes.c_void_p
        for fn, args, res in (
                ("microscope_lib_define", [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.c_uint32], site),
                ("microscope_lib_zone_begin", [site], ctypes.c_int),
                ("microscope_lib_zone_end", [site, ctypes.c_int], None),
                ("microscope_lib_mark", [site], None),
                ("microscope_lib_counter", [site, ctypes.c_double], None),
                ("microscope_lib_label_text", [site, ctypes.c_char_p, ctypes.c_size_t], None),
                ("microscope_lib_label_int", [site, ctypes.c_int64], None),
                ("microscope_lib_label_clear", [site], None),
                ("microscope_lib_recording", [], ctypes.c_int)):
            f = getattr(lib, fn)
            f.argtypes = args
            f.restype = res
        return lib
    return None


_lib = _load()
available = _lib is not None
_sites = {}  # (kind, name, file, line) -> _Site
_sites_lock = threading.Lock()


class _Site:
    """A run-time site of the library: its address and its enabled byte."""
    __slots__ = ("address", "flag")

    def __init__(self, address):
        self.address = address
        self.flag = ctypes.c_uint8.from_address(address + _ENABLED_AT) if address else None

    def on(self):
        return self.flag is not None and self.flag.value != 0


_NO_SITE = _Site(None)


def _site(kind, name, file, line):
    if _lib is None:
        return _NO_SITE
    key = (kind, name, file, line)
    site = _sites.get(key)
    if site is None:
        with _sites_lock:
            site = _sites.get(key)
            if site is None:
                address = _lib.microscope_lib_define(kind, str(name).encode(), str(file).encode(),
                                                     int(line))
                site = _Site(address) if address else _NO_SITE
                _sites[key] = site
    return site


def _caller(depth=2):
    f = sys._getframe(depth)
    return f.f_code.co_filename, f.f_lineno


def recording():
    """Whether a recorder listens to this program's probes now."""
    return _lib is not None and _lib.microscope_lib_recording() != 0


class zone:
    """A zone: `with zone("name"):` around code, or `@zone("name")` on a
    function (each call a zone). Zones of one thread nest as the code runs."""
    __slots__ = ("_name", "_open", "_at", "_site")

    def __init__(self, name):
        self._name = name
        self._open = []  # (site, begun) of each enter not yet exited
        self._at = None  # the code and instruction it was last entered from
        self._site = _NO_SITE

    def __enter__(self):
        if _lib is None:
            self._open.append((_NO_SITE, False))
            return self
        f = sys._getframe(1)
        at = (f.f_code, f.f_lasti)  # cheaper than the line, which is computed
        if at != self._at:
            self._site = _site(_ZONE, self._name, f.f_code.co_filename, f.f_lineno)
            self._at = at
        site = self._site
        begun = site.on() and _lib.microscope_lib_zone_begin(site.address)
        self._open.append((site, begun))
        return self

    def __exit__(self, *exc):
        site, begun = self._open.pop()
        if begun:
            _lib.microscope_lib_zone_end(site.address, 1)
        return False

    def __call__(self, fn):
        code = getattr(fn, "__code__", None)
        site = _site(_ZONE, self._name, code.co_filename if code else "",
                     code.co_firstlineno if code else 0)

        @functools.wraps(fn)
        def zoned(*args, **kwargs):
            begun = site.on() and _lib.microscope_lib_zone_begin(site.address)
            try:
                return fn(*args, **kwargs)
            finally:
                if begun:
                    _lib.microscope_lib_zone_end(site.address, 1)
        return zoned


def mark(name):
    """An instant of this thread's timeline."""
    site = _site(_MARK, name, *_caller())
    if site.on():
        _lib.microscope_lib_mark(site.address)


def counter(name, value):
    """A named value over time (a float)."""
    site = _site(_COUNTER, name, *_caller())
    if site.on():
        _lib.microscope_lib_counter(site.address, float(value))


def label(key, value):
    """This thread carries `key` = `value` (a str or an int) from now until
    the key is set again or cleared."""
    site = _site(_LABEL, key, *_caller())
    if not site.on():
        return
    if isinstance(value, int) and not isinstance(value, bool):
        _lib.microscope_lib_label_int(site.address, value)
    else:
        text = str(value).encode()
        _lib.microscope_lib_label_text(site.address, text, len(text))


def clear_label(key):
    site = _site(_LABEL, key, *_caller())
    if site.on():
        _lib.microscope_lib_label_clear(site.address)


_traced = {}  # code -> _Site
_calls = threading.local()  # per thread: (site, begun) of each call not yet returned


_THIS_FILE = __file__


def _profile(frame, event, arg):
    if event == "call":
        code = frame.f_code
        site = _traced.get(code)
        if site is None and code.co_filename == _THIS_FILE:
            site = _traced[code] = _NO_SITE  # this package's own calls are not traced
        if site is None:
            name = getattr(code, "co_qualname", code.co_name)
            site = _traced[code] = _site(_ZONE, name, code.co_filename, code.co_firstlineno)
        begun = site.on() and _lib.microscope_lib_zone_begin(site.address)
        stack = _calls.__dict__.get("stack")
        if stack is None:
            stack = _calls.stack = []
        stack.append((site, begun))
    elif event == "return":
        # Returns of calls begun before tracing find the stack empty.
        stack = _calls.__dict__.get("stack")
        if stack:
            site, begun = stack.pop()
            if begun:
                _lib.microscope_lib_zone_end(site.address, 1)


def trace_calls(on=True):
    """A zone for each Python function as it is called (its site defined as
    it first runs, named by its qualified name), in every thread started
    from now on and this one; trace_calls(False) stops. Calls made while a
    site is off and returns from calls begun before leave no record, so
    every end has its begin."""
    if _lib is None:
        return
    if on:
        threading.setprofile(_profile)
        sys.setprofile(_profile)
    else:
        sys.setprofile(None)
        threading.setprofile(None)
