//! A line formatted in a fixed buffer and written to stderr with write(2): what the plugin's
//! abort and fault handlers print, where nothing may allocate.

/// Up to `N` bytes of text; what does not fit is cut off (and `write_str` says so).
pub struct Line<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Line<N> {
    pub const fn new() -> Self {
        Line {
            bytes: [0; N],
            len: 0,
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Writes the line to stderr.
    pub fn write_to_stderr(&self) {
        write_stderr(self.as_bytes());
    }
}

impl<const N: usize> std::fmt::Write for Line<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = N - self.len;
        let n = s.len().min(room);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        if n < s.len() {
            Err(std::fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// All of `bytes` to stderr, however many writes it takes (none if stderr is closed).
pub fn write_stderr(bytes: &[u8]) {
    let mut done = 0;
    while done < bytes.len() {
        // SAFETY: the range lies in `bytes`; fd 2 is stderr (or closed, then write fails).
        let n = unsafe {
            libc::write(
                2,
                bytes[done..].as_ptr() as *const libc::c_void,
                bytes.len() - done,
            )
        };
        if n <= 0 {
            return;
        }
        done += n as usize;
    }
}
