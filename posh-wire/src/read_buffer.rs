//! Read buffers that start small and grow while reads fill them. Most jobs move a few hundred
//! bytes: a zeroed 256 KiB buffer per stream cost more than the rest of the stream's work
//! (perf on `bench/overhead.sh`'s loop), while a large transfer still reaches full-sized reads
//! after a few of them. Not for a relay whose reads must end where its writer's writes ended
//! (`runtime::output`): a read that fills a small buffer may stop mid-line.

/// The first size: a page's worth of pipe output in one read.
const START: usize = 16 * 1024;

#[derive(Debug)]
pub struct ReadBuffer {
    buf: Vec<u8>,
    max: usize,
}

impl ReadBuffer {
    /// A buffer that grows up to `max` bytes.
    pub fn new(max: usize) -> ReadBuffer {
        ReadBuffer { buf: vec![0; START.min(max)], max }
    }

    /// Where the next read goes.
    pub fn space(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// The first `n` bytes, as read into [`ReadBuffer::space`].
    pub fn data(&self, n: usize) -> &[u8] {
        &self.buf[..n]
    }

    /// Called after each read of `n` bytes: a read that filled the buffer doubles it.
    pub fn grow_if_filled(&mut self, n: usize) {
        if n == self.buf.len() && self.buf.len() < self.max {
            self.buf.resize((self.buf.len() * 2).min(self.max), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ReadBuffer;

    #[test]
    fn grows_only_while_reads_fill_it_and_never_past_its_bound() {
        let mut buffer = ReadBuffer::new(64 * 1024);
        assert_eq!(buffer.space().len(), 16 * 1024);
        buffer.grow_if_filled(100);
        assert_eq!(buffer.space().len(), 16 * 1024);
        let sizes: Vec<usize> = (0..4)
            .map(|_| {
                let n = buffer.space().len();
                buffer.grow_if_filled(n);
                buffer.space().len()
            })
            .collect();
        assert_eq!(sizes, [32 * 1024, 64 * 1024, 64 * 1024, 64 * 1024]);
    }
}
