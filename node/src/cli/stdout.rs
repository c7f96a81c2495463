//! [`PipeStdout`]: the commands' standard output, where a reader that went away (`gamechain
//! block latest | head -c 10`) ends the process quietly instead of with a panic or an error.

use std::io::{self, Write};

/// Standard output for the commands' data. A write or flush that fails because the reading
/// end of the pipe is closed (`BrokenPipe`) exits the process with status 0 and prints
/// nothing: the reader took what it wanted.
pub struct PipeStdout;

/// `result`, unless it is a closed pipe: then the process exits quietly.
fn quiet_on_closed_pipe<T>(result: io::Result<T>) -> io::Result<T> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => other,
    }
}

impl Write for PipeStdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        quiet_on_closed_pipe(io::stdout().write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        quiet_on_closed_pipe(io::stdout().flush())
    }
}
