//! The panic boundary every ABI entry point goes through, and the pointer checks around it.
//!
//! The entry points in the sibling modules turn their pointer arguments into references,
//! slices and out-parameters through these helpers; the few direct dereferences elsewhere are
//! listed in the [`ffi`](super) module's documentation.

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::status::{cuzk_status, AbiError};
use crate::error::panic_message;

/// What an entry point's body returns.
pub(crate) type AbiResult<T = ()> = Result<T, AbiError>;

/// A C string for `msg` (NULs replaced), owned by the caller until `cuzk_string_free`.
pub(crate) fn c_string(msg: String) -> *mut c_char {
    let clean = msg.replace('\0', "\u{FFFD}");
    CString::new(clean)
        .map(CString::into_raw)
        .unwrap_or(std::ptr::null_mut())
}

/// Runs an entry point's body: a panic or an error becomes a status, and the message goes to
/// `*err` when `err` is not NULL. On success `*err` is not touched.
pub(crate) fn call(err: *mut *mut c_char, body: impl FnOnce() -> AbiResult) -> cuzk_status {
    let (status, msg) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return cuzk_status::Ok,
        Ok(Err(e)) => (e.status(), e.message()),
        Err(payload) => (
            cuzk_status::Panic,
            format!(
                "panic inside cuzk (a bug; please report it): {}",
                panic_message(&*payload)
            ),
        ),
    };
    if !err.is_null() {
        // SAFETY: the caller passes either NULL (checked above) or a writable `char **`, as
        // every entry point's documentation requires.
        unsafe { err.write(c_string(msg)) };
    }
    status
}

/// Runs a body that cannot report a status (a `*_free`): a panic is logged and swallowed,
/// since unwinding into C is undefined behaviour.
pub(crate) fn call_void(body: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(body)) {
        log::error!(
            "panic inside cuzk (a bug; please report it): {}",
            panic_message(&*payload)
        );
    }
}

/// Runs a body returning a plain value; a panic yields `fallback`.
pub(crate) fn call_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        log::error!(
            "panic inside cuzk (a bug; please report it): {}",
            panic_message(&*payload)
        );
        fallback
    })
}

/// `p` as a shared reference, or the NULL-argument error naming it.
///
/// # Safety
/// `p` is NULL or points to a live `T` not mutated for `'a`.
pub(crate) unsafe fn arg<'a, T>(p: *const T, name: &'static str) -> AbiResult<&'a T> {
    // SAFETY: per this function's contract.
    unsafe { p.as_ref() }.ok_or(AbiError::Null(name))
}

/// `len` elements at `p`; NULL is accepted (as empty) only when `len` is 0.
///
/// # Safety
/// When `len > 0`, `p` points to `len` initialised, live `T`s not mutated for `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize, name: &'static str) -> AbiResult<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(AbiError::Null(name));
    }
    if len
        .checked_mul(std::mem::size_of::<T>())
        .map_or(true, |b| b > isize::MAX as usize)
    {
        return Err(AbiError::invalid(format!("`{name}`: length {len} is too large")));
    }
    // SAFETY: non-NULL, and the caller guarantees `len` live elements; the size fits isize.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// `len` writable bytes at `p`; NULL is accepted (as empty) only when `len` is 0.
///
/// # Safety
/// When `len > 0`, `p` points to `len` writable bytes not accessed elsewhere for `'a`.
pub(crate) unsafe fn slice_out<'a>(p: *mut u8, len: usize, name: &'static str) -> AbiResult<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(AbiError::Null(name));
    }
    if len > isize::MAX as usize {
        return Err(AbiError::invalid(format!("`{name}`: length {len} is too large")));
    }
    // SAFETY: non-NULL, and the caller guarantees `len` writable bytes.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// A NUL-terminated string argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string live for `'a`.
pub(crate) unsafe fn c_str<'a>(p: *const c_char, name: &'static str) -> AbiResult<&'a CStr> {
    if p.is_null() {
        return Err(AbiError::Null(name));
    }
    // SAFETY: non-NULL and NUL-terminated per the contract.
    Ok(unsafe { CStr::from_ptr(p) })
}

/// An out-parameter, checked for NULL before any work is done so that it can be written
/// only once the call has succeeded.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Checks `p`.
    pub(crate) fn new(p: *mut T, name: &'static str) -> AbiResult<Self> {
        if p.is_null() {
            Err(AbiError::Null(name))
        } else {
            Ok(Self(p))
        }
    }

    /// Writes the result (the previous contents are overwritten, not dropped).
    ///
    /// # Safety
    /// The pointer given to [`Out::new`] is writable for a `T`.
    pub(crate) unsafe fn write(self, value: T) {
        // SAFETY: non-NULL (checked in `new`) and writable per the contract.
        unsafe { self.0.write(value) }
    }
}

/// An empty vector with room for `n` elements (a count the caller gave, or sized by one): out
/// of memory is `CUZK_STATUS_ALLOCATION`, never the abort of `Vec::with_capacity`.
pub(crate) fn room<T>(n: usize) -> AbiResult<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|e| crate::pool::heap_error(n, std::mem::size_of::<T>(), &e))?;
    Ok(v)
}

/// A copy of `items` in memory of the library's, as [`room`] allocates it.
pub(crate) fn copied<T: Clone>(items: &[T]) -> AbiResult<Vec<T>> {
    let mut v = room(items.len())?;
    v.extend_from_slice(items);
    Ok(v)
}

/// Moves `value` to the heap as an opaque handle for C.
pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Takes back a handle made by [`into_handle`]; NULL gives `None`.
///
/// # Safety
/// `p` is NULL or a pointer from `into_handle::<T>` not taken back before.
pub(crate) unsafe fn take_handle<T>(p: *mut T) -> Option<Box<T>> {
    // SAFETY: per the contract, a live Box allocation of T (or NULL).
    (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(err: *mut c_char) -> String {
        assert!(!err.is_null());
        // SAFETY: a message made by `c_string`, freed once here.
        let s = unsafe { CStr::from_ptr(err) }.to_string_lossy().into_owned();
        // SAFETY: as above.
        drop(unsafe { CString::from_raw(err) });
        s
    }

    #[test]
    fn a_panic_becomes_a_status_with_its_message() {
        let mut err = std::ptr::null_mut();
        let status = call(&mut err, || panic!("deliberate {}", 42));
        assert_eq!(status, cuzk_status::Panic);
        assert!(message(err).contains("deliberate 42"));
        // Without a message slot the status still comes back.
        assert_eq!(call(std::ptr::null_mut(), || panic!("quiet")), cuzk_status::Panic);
        assert_eq!(call_value(7, || panic!("value")), 7);
        call_void(|| panic!("void"));
    }

    #[test]
    fn success_leaves_the_message_slot_alone_and_errors_fill_it() {
        let mut err = std::ptr::null_mut();
        assert_eq!(call(&mut err, || Ok(())), cuzk_status::Ok);
        assert!(err.is_null());
        let status = call(&mut err, || Err(AbiError::Null("thing")));
        assert_eq!(status, cuzk_status::NullArgument);
        assert_eq!(message(err), "argument `thing` is NULL");
        // NULs inside a message do not truncate it.
        let status = call(&mut err, || Err(AbiError::invalid("a\0b")));
        assert_eq!(status, cuzk_status::InvalidArgument);
        assert!(message(err).ends_with("a\u{FFFD}b"));
    }

    #[test]
    fn slices_check_null_and_length() {
        // SAFETY: NULL with length 0 is the documented empty case; NULL with a length is refused
        // before any dereference.
        unsafe {
            assert!(slice::<u8>(std::ptr::null(), 0, "p").unwrap().is_empty());
            assert!(matches!(
                slice::<u8>(std::ptr::null(), 3, "p"),
                Err(AbiError::Null("p"))
            ));
            let big = usize::MAX / 2;
            assert!(matches!(
                slice::<u64>(8 as *const u64, big, "p"),
                Err(AbiError::Core(_))
            ));
        }
        assert!(matches!(
            Out::<u8>::new(std::ptr::null_mut(), "out"),
            Err(AbiError::Null("out"))
        ));
    }

    #[test]
    fn room_the_allocator_cannot_give_is_an_allocation_status() {
        let e = room::<[u8; 32]>(usize::MAX / 64).unwrap_err();
        assert_eq!(e.status(), cuzk_status::Allocation, "{}", e.message());
        assert!(room::<u64>(4).unwrap().capacity() >= 4);
        assert_eq!(copied(&[1, 2, 3]).unwrap(), [1, 2, 3]);
    }
}
