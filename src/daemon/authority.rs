//! A Unix socket accepts any `:authority`, as gRPC servers do. grpc-core clients (Python, C++,
//! Ruby, PHP...) name a `unix:` target's authority after the socket path, percent-encoded
//! (`tmp%2Fcuzk.sock`); the HTTP/2 layer under tonic (h2) parses `:authority` as a URI
//! authority, where `%` outside an escape of the user part is not allowed, and resets the
//! stream (PROTOCOL_ERROR, which such a client reports as INTERNAL) before any handler runs.
//! grpc-go (Curio) sends `localhost` and is not concerned.
//!
//! [`AnyAuthority`] wraps a Unix connection and rewrites, in the bytes the client sends, every
//! `:authority` value h2 would refuse into one it accepts of the same length (each byte not
//! allowed in a host name becomes `_`: `tmp_2Fcuzk.sock`); the daemon serves every authority
//! alike. HPACK (RFC 7541) is stateful, so the wrapper follows the client's header blocks: it
//! reads the HTTP/2 frames, walks each header block's fields and mirrors the dynamic table
//! (which fields it holds, and their sizes), so that it finds `:authority` however it is
//! sent: a literal name, a static or dynamic name index, Huffman-coded or not. A rewritten
//! value keeps its decoded length, and so every table entry its size: the client's table and
//! h2's stay the same. A header block with nothing to rewrite passes unchanged, byte for byte;
//! a rewritten one is sent again as a HEADERS frame (and CONTINUATION frames of at most 16 KiB,
//! HTTP/2's least maximum frame size) with its padding dropped. Other frames pass through as
//! they come. Bytes that are not HTTP/2, and a header block that does not decode, pass
//! unchanged and the wrapper stands aside for the rest of the connection (h2 then answers
//! them as it would).

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// HEADERS and CONTINUATION frame types.
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
/// Frame flags.
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// The least SETTINGS_MAX_FRAME_SIZE an HTTP/2 peer may set: rebuilt frames stay within it.
const MIN_MAX_FRAME: usize = 16_384;
/// A header block larger than this passes unchanged and the wrapper stands aside (h2's own
/// limit on a header list is far lower).
const MAX_BLOCK: usize = 1 << 20;
/// SETTINGS_HEADER_TABLE_SIZE's initial value, which h2 keeps.
const INITIAL_TABLE_SIZE: usize = 4096;

/// A Unix connection whose client may send any `:authority` (see the module).
pub struct AnyAuthority<S> {
    inner: S,
    rewriter: Rewriter,
    /// Bytes rewritten and not yet read, from `pos`.
    out: Vec<u8>,
    pos: usize,
    scratch: Box<[u8]>,
}

impl<S> AnyAuthority<S> {
    /// Wraps a connection from its first byte.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            rewriter: Rewriter::default(),
            out: Vec::new(),
            pos: 0,
            scratch: vec![0; 64 << 10].into_boxed_slice(),
        }
    }

    /// The connection.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for AnyAuthority<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.pos < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.pos);
                buf.put_slice(&this.out[this.pos..this.pos + n]);
                this.pos += n;
                if this.pos == this.out.len() {
                    this.out.clear();
                    this.pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.rewriter.stood_aside() {
                return Pin::new(&mut this.inner).poll_read(cx, buf);
            }
            let mut read = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                // The end: what was held back (part of a frame) goes as it is.
                this.rewriter.finish(&mut this.out);
                if this.out.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            this.rewriter.feed(read.filled(), &mut this.out);
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for AnyAuthority<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for AnyAuthority<tokio::net::UnixStream> {
    type ConnectInfo = <tokio::net::UnixStream as tonic::transport::server::Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

/// Where the client's byte stream is.
#[derive(Debug)]
enum Stage {
    /// In the connection preface, this many bytes of it matched.
    Preface(usize),
    /// In a frame's 9-byte header.
    FrameHead { head: [u8; 9], have: usize },
    /// In the payload of a frame passed through: this many bytes left.
    Payload(usize),
    /// In the payload of a HEADERS or CONTINUATION frame, gathered whole.
    HeaderFrame {
        head: [u8; 9],
        payload: Vec<u8>,
        len: usize,
    },
    /// Not HTTP/2 as expected: every byte passes.
    Aside,
}

/// A header block being gathered (a HEADERS frame and its CONTINUATION frames).
#[derive(Debug, Default)]
struct Block {
    /// The frames as they came.
    raw: Vec<u8>,
    /// The header block fragments, joined.
    fragment: Vec<u8>,
    stream: u32,
    end_stream: bool,
    /// The HEADERS frame's priority fields.
    priority: Option<[u8; 5]>,
}

/// The byte-stream side of [`AnyAuthority`], without I/O: [`feed`](Self::feed) it what the
/// client sent, it appends what h2 is to read.
#[derive(Debug)]
pub struct Rewriter {
    stage: Stage,
    block: Option<Block>,
    table: Table,
    /// Header blocks rewritten (for the log and the tests).
    rewritten: u64,
}

impl Default for Rewriter {
    fn default() -> Self {
        Self {
            stage: Stage::Preface(0),
            block: None,
            table: Table::new(INITIAL_TABLE_SIZE),
            rewritten: 0,
        }
    }
}

impl Rewriter {
    /// Whether it passes every byte from now on.
    pub fn stood_aside(&self) -> bool {
        matches!(self.stage, Stage::Aside)
    }

    /// Header blocks rewritten so far.
    pub fn rewritten(&self) -> u64 {
        self.rewritten
    }

    /// Takes the next bytes from the client, appends to `out` what h2 is to read.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        while !input.is_empty() {
            match &mut self.stage {
                Stage::Aside => {
                    out.extend_from_slice(input);
                    return;
                }
                Stage::Preface(matched) => {
                    let n = input.len().min(PREFACE.len() - *matched);
                    let ok = input[..n] == PREFACE[*matched..*matched + n];
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *matched += n;
                    if !ok {
                        self.stage = Stage::Aside;
                    } else if *matched == PREFACE.len() {
                        self.stage = Stage::FrameHead { head: [0; 9], have: 0 };
                    }
                }
                Stage::FrameHead { head, have } => {
                    let n = input.len().min(9 - *have);
                    head[*have..*have + n].copy_from_slice(&input[..n]);
                    *have += n;
                    input = &input[n..];
                    if *have == 9 {
                        let head = *head;
                        self.frame_head(head, out);
                    }
                }
                Stage::Payload(left) => {
                    let n = input.len().min(*left);
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *left -= n;
                    if *left == 0 {
                        self.stage = Stage::FrameHead { head: [0; 9], have: 0 };
                    }
                }
                Stage::HeaderFrame { payload, len, .. } => {
                    let n = input.len().min(*len - payload.len());
                    payload.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    if payload.len() == *len {
                        let Stage::HeaderFrame { head, payload, .. } =
                            std::mem::replace(&mut self.stage, Stage::FrameHead { head: [0; 9], have: 0 })
                        else {
                            unreachable!("matched above")
                        };
                        self.header_frame(head, payload, out);
                    }
                }
            }
        }
    }

    /// The client closed its side: what is held back goes as it came.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if let Some(block) = self.block.take() {
            out.extend_from_slice(&block.raw);
        }
        match std::mem::replace(&mut self.stage, Stage::Aside) {
            Stage::FrameHead { head, have } => out.extend_from_slice(&head[..have]),
            Stage::HeaderFrame { head, payload, .. } => {
                out.extend_from_slice(&head);
                out.extend_from_slice(&payload);
            }
            _ => {}
        }
    }

    /// Stands aside for the rest of the connection, passing what it held back.
    fn aside(&mut self, out: &mut Vec<u8>) {
        if let Some(block) = self.block.take() {
            out.extend_from_slice(&block.raw);
        }
        self.stage = Stage::Aside;
    }

    fn frame_head(&mut self, head: [u8; 9], out: &mut Vec<u8>) {
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let typ = head[3];
        if typ != HEADERS && typ != CONTINUATION {
            if self.block.is_some() {
                // Another frame inside a header block: h2 refuses the connection.
                self.aside(out);
                out.extend_from_slice(&head);
                return;
            }
            out.extend_from_slice(&head);
            self.stage = if len == 0 {
                Stage::FrameHead { head: [0; 9], have: 0 }
            } else {
                Stage::Payload(len)
            };
            return;
        }
        let held = self.block.as_ref().map_or(0, |b| b.raw.len());
        if held + 9 + len > MAX_BLOCK {
            self.aside(out);
            out.extend_from_slice(&head);
            return;
        }
        self.stage = Stage::HeaderFrame {
            head,
            payload: Vec::with_capacity(len),
            len,
        };
        if len == 0 {
            self.stage = Stage::FrameHead { head: [0; 9], have: 0 };
            self.header_frame(head, Vec::new(), out);
        }
    }

    fn header_frame(&mut self, head: [u8; 9], payload: Vec<u8>, out: &mut Vec<u8>) {
        let (typ, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        if typ == HEADERS {
            if self.block.is_some() {
                self.aside(out);
                out.extend_from_slice(&head);
                out.extend_from_slice(&payload);
                return;
            }
            let Some((fragment, priority)) = headers_fragment(flags, &payload) else {
                out.extend_from_slice(&head);
                out.extend_from_slice(&payload);
                self.stage = Stage::Aside;
                return;
            };
            self.block = Some(Block {
                raw: Vec::new(),
                fragment: fragment.to_vec(),
                stream,
                end_stream: flags & END_STREAM != 0,
                priority,
            });
        } else {
            match &mut self.block {
                Some(block) if block.stream == stream => block.fragment.extend_from_slice(&payload),
                _ => {
                    // A CONTINUATION out of place: h2 refuses the connection.
                    self.aside(out);
                    out.extend_from_slice(&head);
                    out.extend_from_slice(&payload);
                    return;
                }
            }
        }
        let block = self.block.as_mut().expect("set above");
        block.raw.extend_from_slice(&head);
        block.raw.extend_from_slice(&payload);
        if flags & END_HEADERS == 0 {
            return;
        }
        let block = self.block.take().expect("set above");
        match rewrite_block(&block.fragment, &mut self.table) {
            Ok(None) => out.extend_from_slice(&block.raw),
            Ok(Some(fragment)) => {
                self.rewritten += 1;
                frames(&block, &fragment, out);
            }
            Err(_) => {
                // h2 will refuse it (COMPRESSION_ERROR); the table is unknown from here.
                out.extend_from_slice(&block.raw);
                self.stage = Stage::Aside;
            }
        }
    }
}

/// A HEADERS frame's header block fragment and priority fields, its padding dropped; `None`
/// when the padding or priority do not fit the payload.
fn headers_fragment(flags: u8, payload: &[u8]) -> Option<(&[u8], Option<[u8; 5]>)> {
    let mut p = payload;
    let mut pad = 0;
    if flags & PADDED != 0 {
        pad = usize::from(*p.first()?);
        p = &p[1..];
    }
    let mut priority = None;
    if flags & PRIORITY != 0 {
        priority = Some(p.get(..5)?.try_into().ok()?);
        p = &p[5..];
    }
    let end = p.len().checked_sub(pad)?;
    Some((&p[..end], priority))
}

/// `block`'s header block sent again with `fragment`: a HEADERS frame (its END_STREAM and
/// priority kept) and CONTINUATION frames, each within [`MIN_MAX_FRAME`].
fn frames(block: &Block, fragment: &[u8], out: &mut Vec<u8>) {
    let stream = block.stream.to_be_bytes();
    let head = |out: &mut Vec<u8>, len: usize, typ: u8, flags: u8| {
        out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
        out.push(typ);
        out.push(flags);
        out.extend_from_slice(&stream);
    };
    let first_room = MIN_MAX_FRAME - if block.priority.is_some() { 5 } else { 0 };
    let (first, mut rest) = fragment.split_at(fragment.len().min(first_room));
    let mut flags = if block.end_stream { END_STREAM } else { 0 };
    if block.priority.is_some() {
        flags |= PRIORITY;
    }
    if rest.is_empty() {
        flags |= END_HEADERS;
    }
    let priority_len = if block.priority.is_some() { 5 } else { 0 };
    head(out, first.len() + priority_len, HEADERS, flags);
    if let Some(p) = &block.priority {
        out.extend_from_slice(p);
    }
    out.extend_from_slice(first);
    while !rest.is_empty() {
        let (chunk, after) = rest.split_at(rest.len().min(MIN_MAX_FRAME));
        head(
            out,
            chunk.len(),
            CONTINUATION,
            if after.is_empty() { END_HEADERS } else { 0 },
        );
        out.extend_from_slice(chunk);
        rest = after;
    }
}

/// A header block that does not decode.
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed(&'static str);

/// The dynamic table as far as the rewriting needs it: per entry, whether its name is
/// `:authority`, its name's length and its size (RFC 7541 §4.1), newest first.
#[derive(Debug)]
struct Table {
    entries: VecDeque<Entry>,
    size: usize,
    max: usize,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    authority: bool,
    name_len: usize,
    size: usize,
}

impl Table {
    fn new(max: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            size: 0,
            max,
        }
    }

    /// The name of entry `index` of the static and dynamic tables (1-based): whether it is
    /// `:authority`, and its length.
    fn name(&self, index: usize) -> Result<(bool, usize), Malformed> {
        match index {
            0 => Err(Malformed("index 0")),
            i if i <= STATIC_NAMES.len() => Ok((i == 1, STATIC_NAMES[i - 1].len())),
            i => (self.entries.get(i - STATIC_NAMES.len() - 1))
                .map(|e| (e.authority, e.name_len))
                .ok_or(Malformed("index beyond the dynamic table")),
        }
    }

    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            let e = self.entries.pop_back().expect("size counts the entries");
            self.size -= e.size;
        }
    }

    fn resize(&mut self, max: usize) {
        self.max = max;
        self.evict_to(max);
    }

    fn insert(&mut self, e: Entry) {
        if e.size > self.max {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max - e.size);
        self.size += e.size;
        self.entries.push_front(e);
    }
}

/// Walks a header block, mirroring the table's changes, and returns it with each `:authority`
/// value h2 would refuse rewritten ([`acceptable`]); `None` when there is none.
fn rewrite_block(block: &[u8], table: &mut Table) -> Result<Option<Vec<u8>>, Malformed> {
    let mut out: Option<Vec<u8>> = None;
    let mut r = Reader { b: block, at: 0 };
    while r.at < block.len() {
        let start = r.at;
        let first = block[start];
        if first & 0x80 != 0 {
            // Indexed field: the table is unchanged.
            table.name(r.int(7)?)?;
            if let Some(o) = &mut out {
                o.extend_from_slice(&block[start..r.at]);
            }
            continue;
        }
        if first & 0xe0 == 0x20 {
            let max = r.int(5)?;
            if max > INITIAL_TABLE_SIZE {
                return Err(Malformed("a table size over SETTINGS_HEADER_TABLE_SIZE"));
            }
            table.resize(max);
            if let Some(o) = &mut out {
                o.extend_from_slice(&block[start..r.at]);
            }
            continue;
        }
        // A literal field: with incremental indexing (01), without (0000), never (0001).
        let indexing = first & 0xc0 == 0x40;
        let name_index = r.int(if indexing { 6 } else { 4 })?;
        let (authority, name_len) = if name_index == 0 {
            let name = r.string()?;
            (name == b":authority", name.len())
        } else {
            table.name(name_index)?
        };
        let value_at = r.at;
        let value = r.string()?;
        if indexing {
            table.insert(Entry {
                authority,
                name_len,
                size: name_len + value.len() + 32,
            });
        }
        if authority && !acceptable(&value) {
            let o = out.get_or_insert_with(|| block[..start].to_vec());
            o.extend_from_slice(&block[start..value_at]);
            let same_length: Vec<u8> = value.iter().map(|&b| host_byte(b)).collect();
            put_int(o, 0x00, 7, same_length.len());
            o.extend_from_slice(&same_length);
        } else if let Some(o) = &mut out {
            o.extend_from_slice(&block[start..r.at]);
        }
    }
    Ok(out)
}

/// Whether h2 takes `value` as an `:authority` (an empty one it refuses, but an empty value
/// has no same-length replacement: it stays, and h2 answers it as before).
fn acceptable(value: &[u8]) -> bool {
    value.is_empty() || tonic::codegen::http::uri::Authority::try_from(value).is_ok()
}

/// A byte of a host name: letters, digits and `-._~` stay, any other becomes `_`.
fn host_byte(b: u8) -> u8 {
    if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
        b
    } else {
        b'_'
    }
}

/// A reader of HPACK's integers and strings.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, Malformed> {
        let b = *self.b.get(self.at).ok_or(Malformed("cut short"))?;
        self.at += 1;
        Ok(b)
    }

    /// An integer with an `n`-bit prefix (RFC 7541 §5.1).
    fn int(&mut self, n: u32) -> Result<usize, Malformed> {
        let mask = (1usize << n) - 1;
        let mut v = usize::from(self.byte()?) & mask;
        if v < mask {
            return Ok(v);
        }
        let mut shift = 0;
        loop {
            let b = self.byte()?;
            if shift > 21 {
                return Err(Malformed("an integer over 2^28"));
            }
            v += usize::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
    }

    /// A string literal, decoded (RFC 7541 §5.2).
    fn string(&mut self) -> Result<Vec<u8>, Malformed> {
        let huffman = self.b.get(self.at).ok_or(Malformed("cut short"))? & 0x80 != 0;
        let len = self.int(7)?;
        let end = self.at.checked_add(len).filter(|&e| e <= self.b.len());
        let bytes = &self.b[self.at..end.ok_or(Malformed("a string past the block"))?];
        self.at += len;
        if huffman {
            huffman_decode(bytes)
        } else {
            Ok(bytes.to_vec())
        }
    }
}

/// Appends `v` as an integer with an `n`-bit prefix, the prefix's other bits `high`.
fn put_int(out: &mut Vec<u8>, high: u8, n: u32, mut v: usize) {
    let mask = (1usize << n) - 1;
    if v < mask {
        out.push(high | v as u8);
        return;
    }
    out.push(high | mask as u8);
    v -= mask;
    while v >= 0x80 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The static table's names (RFC 7541 Appendix A), index 1 first.
const STATIC_NAMES: [&str; 61] = [
    ":authority",
    ":method",
    ":method",
    ":path",
    ":path",
    ":scheme",
    ":scheme",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "accept",
    "access-control-allow-origin",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-range",
    "content-type",
    "cookie",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "link",
    "location",
    "max-forwards",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "refresh",
    "retry-after",
    "server",
    "set-cookie",
    "strict-transport-security",
    "transfer-encoding",
    "user-agent",
    "vary",
    "via",
    "www-authenticate",
];

/// The length in bits of each symbol's code in HPACK's Huffman code (RFC 7541 Appendix B;
/// symbol 256 is EOS). The code is canonical: the lengths make the codes ([`Huffman`]).
const HUFFMAN_BITS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, //
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, //
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, //
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, //
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, //
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, //
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, //
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, //
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, //
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, //
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, //
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, //
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, //
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, //
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, //
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, //
    30,
];

/// The canonical Huffman code of [`HUFFMAN_BITS`]: per code length, the first code and where
/// its symbols start in `symbols` (the symbols by length, then value).
struct Huffman {
    first: [u32; 31],
    count: [u32; 31],
    start: [usize; 31],
    symbols: Vec<u16>,
}

impl Huffman {
    fn get() -> &'static Self {
        static CODE: std::sync::OnceLock<Huffman> = std::sync::OnceLock::new();
        CODE.get_or_init(|| {
            let mut symbols: Vec<u16> = (0..257).collect();
            symbols.sort_by_key(|&s| (HUFFMAN_BITS[usize::from(s)], s));
            let mut count = [0u32; 31];
            for &bits in &HUFFMAN_BITS {
                count[usize::from(bits)] += 1;
            }
            let (mut first, mut start) = ([0u32; 31], [0usize; 31]);
            let (mut code, mut at) = (0u32, 0usize);
            for len in 1..31 {
                code = (code + count[len - 1]) << 1;
                first[len] = code;
                start[len] = at;
                at += count[len] as usize;
            }
            Self {
                first,
                count,
                start,
                symbols,
            }
        })
    }

    /// The code of `symbol`: its bits, its length.
    #[cfg(test)]
    fn code(&self, symbol: u16) -> (u32, u8) {
        let len = HUFFMAN_BITS[usize::from(symbol)];
        let l = usize::from(len);
        let k = self.symbols[self.start[l]..self.start[l] + self.count[l] as usize]
            .iter()
            .position(|&s| s == symbol)
            .expect("every symbol has a code");
        (self.first[l] + k as u32, len)
    }
}

/// Decodes a Huffman-coded string (RFC 7541 §5.2): the padding must be at most 7 bits, all
/// ones (a prefix of EOS), and EOS itself is not allowed.
fn huffman_decode(bytes: &[u8]) -> Result<Vec<u8>, Malformed> {
    let h = Huffman::get();
    let mut out = Vec::with_capacity(bytes.len() * 8 / 5);
    let (mut code, mut len) = (0u32, 0usize);
    for &byte in bytes {
        for bit in (0..8).rev() {
            code = code << 1 | u32::from(byte >> bit & 1);
            len += 1;
            if len > 30 {
                return Err(Malformed("a Huffman code over 30 bits"));
            }
            let k = code.wrapping_sub(h.first[len]);
            if code >= h.first[len] && k < h.count[len] {
                let symbol = h.symbols[h.start[len] + k as usize];
                if symbol == 256 {
                    return Err(Malformed("EOS in a Huffman string"));
                }
                out.push(symbol as u8);
                code = 0;
                len = 0;
            }
        }
    }
    if len > 7 || code != (1 << len) - 1 {
        return Err(Malformed("Huffman padding that is not a prefix of EOS"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn huffman_encode(s: &[u8]) -> Vec<u8> {
        let h = Huffman::get();
        let (mut acc, mut bits, mut out) = (0u64, 0u32, Vec::new());
        for &b in s {
            let (code, len) = h.code(u16::from(b));
            acc = acc << len | u64::from(code);
            bits += u32::from(len);
            while bits >= 8 {
                out.push((acc >> (bits - 8)) as u8);
                bits -= 8;
            }
        }
        if bits > 0 {
            out.push((acc << (8 - bits)) as u8 | (0xff >> bits));
        }
        out
    }

    /// A string literal: raw, or Huffman-coded.
    fn string(s: &[u8], huffman: bool) -> Vec<u8> {
        let mut out = Vec::new();
        if huffman {
            let coded = huffman_encode(s);
            put_int(&mut out, 0x80, 7, coded.len());
            out.extend_from_slice(&coded);
        } else {
            put_int(&mut out, 0, 7, s.len());
            out.extend_from_slice(s);
        }
        out
    }

    /// A literal field: `kind` 0x40 (indexing), 0x00 (without), 0x10 (never); the name by
    /// index, or literal when `name_index` is 0.
    fn literal(kind: u8, name_index: usize, name: &[u8], value: &[u8], huffman: bool) -> Vec<u8> {
        let mut out = Vec::new();
        put_int(&mut out, kind, if kind == 0x40 { 6 } else { 4 }, name_index);
        if name_index == 0 {
            out.extend(string(name, huffman));
        }
        out.extend(string(value, huffman));
        out
    }

    fn frame(typ: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        out.extend([typ, flags]);
        out.extend(stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// The header block grpc-core (grpcio 1.85) sent for a call on `unix:///tmp/authtest/raw.sock`,
    /// then the one of the next call on the connection (every field indexed).
    const GRPC_CORE_FIRST: &str = "40053a70617468202f63757a6b2e76312e50726f76696e67456e67696e652f476574537461747573400a3a617574686f7269747919746d7025324661757468746573742532467261772e736f636b8386400c636f6e74656e742d74797065106170706c69636174696f6e2f677270634002746508747261696c6572734014677270632d6163636570742d656e636f64696e67176964656e746974792c206465666c6174652c20677a6970400c677270632d74696d656f7574023353400a757365722d6167656e7430677270632d707974686f6e2f312e38352e3320677270632d632f35382e302e3020286c696e75783b2063687474703229";
    const GRPC_CORE_NEXT: &str = "c4c38386c2c1c0400c677270632d74696d656f757405333031306dbf";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn the_huffman_code_decodes_rfc_7541s_examples() {
        // RFC 7541 C.4.1 and C.4.2.
        assert_eq!(
            huffman_decode(&unhex("f1e3c2e5f23a6ba0ab90f4ff")).unwrap(),
            b"www.example.com"
        );
        assert_eq!(huffman_decode(&unhex("a8eb10649cbf")).unwrap(), b"no-cache");
        assert_eq!(huffman_encode(b"www.example.com"), unhex("f1e3c2e5f23a6ba0ab90f4ff"));
        // Every byte value round-trips.
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(huffman_decode(&huffman_encode(&all)).unwrap(), all);
        // Padding of zeros, or of 8 bits and more, is refused.
        assert_eq!(
            huffman_decode(&[0x07]).unwrap(),
            b"0",
            "'0' (00000) and the padding 111"
        );
        assert!(huffman_decode(&[0x00]).is_err(), "'0' and the padding 000");
        assert!(huffman_decode(&unhex("f1e3c2e5f23a6ba0ab90f4ffff")).is_err());
        assert!(huffman_decode(&[0xff, 0xff, 0xff, 0xff]).is_err(), "EOS");
    }

    #[test]
    fn grpc_cores_authority_is_rewritten_and_the_table_stays_in_step() {
        let mut table = Table::new(INITIAL_TABLE_SIZE);
        let first = unhex(GRPC_CORE_FIRST);
        let rewritten = rewrite_block(&first, &mut table)
            .unwrap()
            .expect("the path is rewritten");
        let old: &[u8] = b"\x19tmp%2Fauthtest%2Fraw.sock";
        let new: &[u8] = b"\x19tmp_2Fauthtest_2Fraw.sock";
        let at = first.windows(old.len()).position(|w| w == old).unwrap();
        assert_eq!(&rewritten[..at], &first[..at]);
        assert_eq!(&rewritten[at..at + new.len()], new);
        assert_eq!(&rewritten[at + new.len()..], &first[at + old.len()..]);
        assert!(acceptable(&new[1..]) && !acceptable(&old[1..]));
        // The same entries, of the same sizes, whichever block the decoder read.
        let mut other = Table::new(INITIAL_TABLE_SIZE);
        assert_eq!(
            rewrite_block(&rewritten, &mut other).unwrap(),
            None,
            "nothing left to rewrite"
        );
        let sizes = |t: &Table| t.entries.iter().map(|e| (e.authority, e.size)).collect::<Vec<_>>();
        assert_eq!(sizes(&table), sizes(&other));
        assert_eq!(table.size, other.size);
        assert!(table.entries.iter().any(|e| e.authority && e.size == 10 + 25 + 32));
        // The next call names the entry: nothing to rewrite (h2's entry is rewritten already).
        assert_eq!(rewrite_block(&unhex(GRPC_CORE_NEXT), &mut table).unwrap(), None);
    }

    #[test]
    fn every_way_of_sending_authority_is_found() {
        let bad = b"tmp%2Fcuzk.sock";
        let good = b"tmp_2Fcuzk.sock";
        for huffman in [false, true] {
            for (kind, name_index) in [(0x40, 1), (0x40, 0), (0x00, 1), (0x00, 0), (0x10, 1), (0x10, 0)] {
                let mut table = Table::new(INITIAL_TABLE_SIZE);
                let mut block = vec![0x82, 0x87]; // :method GET, :scheme https
                block.extend(literal(kind, name_index, b":authority", bad, huffman));
                block.extend(literal(0x00, 4, b"", b"/x", huffman)); // :path by index
                let out = rewrite_block(&block, &mut table).unwrap().expect("rewritten");
                let mut want = vec![0x82, 0x87];
                let mut field = Vec::new();
                put_int(&mut field, kind, if kind == 0x40 { 6 } else { 4 }, name_index);
                if name_index == 0 {
                    field.extend(string(b":authority", huffman));
                }
                field.extend(string(good, false));
                want.extend(field);
                want.extend(literal(0x00, 4, b"", b"/x", huffman));
                assert_eq!(out, want, "kind {kind:#x}, name {name_index}, huffman {huffman}");
                assert_eq!(table.entries.len(), usize::from(kind == 0x40));
            }
        }
        // A new authority under a dynamic name index (the :authority entry, index 62).
        let mut table = Table::new(INITIAL_TABLE_SIZE);
        let mut block = literal(0x40, 1, b"", b"localhost", false);
        block.extend(literal(0x00, 62, b"", bad, true));
        let out = rewrite_block(&block, &mut table).unwrap().expect("rewritten");
        let mut want = literal(0x40, 1, b"", b"localhost", false);
        want.push(0x0f);
        want.push(62 - 15);
        want.extend(string(good, false));
        assert_eq!(out, want);
        // Accepted authorities, and other fields with the same bytes, pass untouched.
        for ok in [&b"localhost"[..], b"127.0.0.1:9820", b"[::1]:80", b"x"] {
            let block = literal(0x40, 1, b"", ok, true);
            assert_eq!(
                rewrite_block(&block, &mut Table::new(INITIAL_TABLE_SIZE)).unwrap(),
                None
            );
        }
        let block = literal(0x40, 0, b"x-socket", bad, false);
        assert_eq!(
            rewrite_block(&block, &mut Table::new(INITIAL_TABLE_SIZE)).unwrap(),
            None
        );
    }

    #[test]
    fn the_table_evicts_and_resizes_as_the_decoder_does() {
        let mut table = Table::new(INITIAL_TABLE_SIZE);
        // 100 entries of 10 + 50 + 32 = 92 bytes: 44 fit in 4096.
        let value = [b'v'; 50];
        let mut block = Vec::new();
        for _ in 0..100 {
            block.extend(literal(0x40, 0, b"x-ten-char", &value, false));
        }
        block.extend(literal(0x40, 1, b"", b"a%b", false));
        assert!(rewrite_block(&block, &mut table).unwrap().is_some());
        assert_eq!(table.entries.len(), 45, "44 of 92 bytes and the authority's 45");
        assert!(table.size <= INITIAL_TABLE_SIZE);
        assert!(table.entries[0].authority, "the newest first");
        // A size update to 100 keeps the newest entry only; to 0 none; an entry over the
        // size empties the table.
        assert!(rewrite_block(&[0x3f, 0x45], &mut table).unwrap().is_none()); // 31 + 69 = 100
        assert_eq!((table.entries.len(), table.max), (1, 100));
        assert!(rewrite_block(&[0x20], &mut table).unwrap().is_none());
        assert_eq!(table.entries.len(), 0);
        // An index beyond the table, a string past the block, a size over the setting.
        assert_eq!(
            rewrite_block(&[0xbe], &mut table),
            Err(Malformed("index beyond the dynamic table"))
        );
        assert!(rewrite_block(&[0x41, 0x05, b'a'], &mut table).is_err());
        assert!(rewrite_block(&[0x3f, 0xe1, 0x1f], &mut table).is_ok(), "4096");
        assert!(rewrite_block(&[0x3f, 0xe2, 0x1f], &mut table).is_err(), "4097");
        assert!(rewrite_block(&[0x80], &mut table).is_err(), "index 0");
    }

    /// Feeds `input` to a rewriter in pieces of `step` bytes.
    /// Feeds `input` to a rewriter in pieces of `step` bytes, then ends the stream; what came
    /// out, and whether the rewriter stood aside before the end.
    fn through(input: &[u8], step: usize) -> (Vec<u8>, Rewriter, bool) {
        let mut r = Rewriter::default();
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            r.feed(piece, &mut out);
        }
        let aside = r.stood_aside();
        r.finish(&mut out);
        (out, r, aside)
    }

    #[test]
    fn frames_pass_or_are_sent_again_with_the_block_rewritten() {
        let block = unhex(GRPC_CORE_FIRST);
        let (rewritten, _) = {
            let mut t = Table::new(INITIAL_TABLE_SIZE);
            (rewrite_block(&block, &mut t).unwrap().unwrap(), t)
        };
        let settings = frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]);
        let data = frame(0x0, END_STREAM, 1, &[0, 0, 0, 0, 0]);
        // The block split over HEADERS (padded, with priority) and a CONTINUATION.
        let mut headers_payload = vec![3u8];
        headers_payload.extend([0x80, 0, 0, 0, 15]);
        headers_payload.extend_from_slice(&block[..100]);
        headers_payload.extend([0, 0, 0]);
        let mut input = PREFACE.to_vec();
        input.extend(&settings);
        input.extend(frame(HEADERS, PADDED | PRIORITY, 1, &headers_payload));
        input.extend(frame(CONTINUATION, END_HEADERS, 1, &block[100..]));
        input.extend(&data);
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &unhex(GRPC_CORE_NEXT)));
        let mut want = PREFACE.to_vec();
        want.extend(&settings);
        let mut p = vec![0x80, 0, 0, 0, 15];
        p.extend(&rewritten);
        want.extend(frame(HEADERS, PRIORITY | END_HEADERS, 1, &p));
        want.extend(&data);
        want.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &unhex(GRPC_CORE_NEXT)));
        for step in [1, 7, 64, input.len()] {
            let (out, r, aside) = through(&input, step);
            assert_eq!(out, want, "in pieces of {step}");
            assert_eq!(r.rewritten(), 1);
            assert!(!aside);
        }
        // Nothing to rewrite: every byte as it came.
        let mut plain = PREFACE.to_vec();
        plain.extend(frame(
            HEADERS,
            END_HEADERS,
            1,
            &literal(0x40, 1, b"", b"localhost", true),
        ));
        plain.extend(&data);
        assert_eq!(through(&plain, 5).0, plain);
        // Not HTTP/2, or a block that does not decode: as it came, and aside from then on.
        let http1 = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
        let (out, _, aside) = through(&http1, 3);
        assert_eq!((out, aside), (http1, true));
        let mut broken = PREFACE.to_vec();
        broken.extend(frame(HEADERS, END_HEADERS, 1, &[0xbf]));
        broken.extend(frame(HEADERS, END_HEADERS, 3, &block));
        let (out, _, aside) = through(&broken, 4);
        assert_eq!((out, aside), (broken, true));
        // A connection cut inside a frame: what came passes.
        let cut = [PREFACE.as_slice(), &frame(HEADERS, END_HEADERS, 1, &block)[..50]].concat();
        assert_eq!(through(&cut, 9).0, cut);
    }

    #[test]
    fn a_grown_block_is_split_within_the_least_frame_size() {
        // An authority of 20,000 bytes Huffman-coded in fewer: sent raw it needs two frames.
        let long = vec![b'%'; 20_000];
        let block = literal(0x00, 1, b"", &long, true);
        assert!(block.len() < MIN_MAX_FRAME);
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 5, &block));
        let (out, ..) = through(&input, 4096);
        let mut frames_seen = Vec::new();
        let mut at = PREFACE.len();
        let mut fragment = Vec::new();
        while at < out.len() {
            let len = usize::from(out[at]) << 16 | usize::from(out[at + 1]) << 8 | usize::from(out[at + 2]);
            assert!(len <= MIN_MAX_FRAME);
            frames_seen.push((out[at + 3], out[at + 4]));
            fragment.extend_from_slice(&out[at + 9..at + 9 + len]);
            at += 9 + len;
        }
        assert_eq!(frames_seen, [(HEADERS, END_STREAM), (CONTINUATION, END_HEADERS)]);
        let mut want = vec![0x01];
        want.extend(string(&vec![b'_'; 20_000], false));
        assert_eq!(fragment, want);
    }
}
