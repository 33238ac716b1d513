//! The proxy's decoder of what a client (or another proxy) sends: the request line (a job, a
//! fetch, a question about the export, files to send) and the frames after it; and the client's decoder of a
//! proxy's answer to a question. Any bytes: an error, never a panic or an unbounded allocation.
#![no_main]
use libfuzzer_sys::fuzz_target;
use posh_wire::protocol::{self, Answer, Ask, Fetch, Request, SendFiles};

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    runtime.block_on(async {
        let _ = protocol::read_line::<_, Request>(&mut tokio::io::BufReader::new(data)).await;
        let _ = protocol::read_line::<_, Fetch>(&mut tokio::io::BufReader::new(data)).await;
        let _ = protocol::read_line::<_, Ask>(&mut tokio::io::BufReader::new(data)).await;
        let _ = protocol::read_line::<_, SendFiles>(&mut tokio::io::BufReader::new(data)).await;
        let _ = protocol::read_line::<_, Answer>(&mut tokio::io::BufReader::new(data)).await;
        let mut frames = data;
        while let Ok(Some(_)) = protocol::read_frame(&mut frames).await {}
    });
});
