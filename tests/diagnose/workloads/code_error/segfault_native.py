"""A native extension dereferences NULL: SIGSEGV."""

import ctypes
import faulthandler

faulthandler.enable()
print("calling native code", flush=True)
ctypes.string_at(0)
