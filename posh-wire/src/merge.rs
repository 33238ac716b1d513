//! The merge steps posh performs itself (`merge:sum`, `merge:uniq_count`), wherever a split's
//! copies are joined: at the client's fan-in, or at the proxy that joins them next to the file
//! they are written to (the other copies' outputs fetched from their proxies).

use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

/// `merge:sum`: the copies print the same lines of numbers (`wc`, `grep -c`); the merged output
/// is the first copy's text with every number replaced by the sum of that number across copies,
/// right-aligned in the first copy's field width as printf's `%7d` would be. Copies whose output
/// differs in shape are not summed: everything is written as it came, in order.
/// Fails when the outputs together exceed `limit` bytes (they are held whole to be added up).
pub async fn sum<R, W>(readers: Vec<R>, out: &mut W, limit: u64) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + ?Sized,
{
    let mut outputs = Vec::new();
    let mut left = limit;
    for input in readers {
        let mut text = Vec::new();
        let read = input.take(left.saturating_add(1)).read_to_end(&mut text).await? as u64;
        if read > left {
            let message = format!("the outputs to add up exceed {limit} bytes");
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, message));
        }
        left -= read;
        outputs.push(text);
    }
    out.write_all(&sum_texts(&outputs)).await?;
    out.flush().await
}

/// A line as runs of blanks, each followed by a word (the last word may be empty).
type Fields<'a> = Vec<(&'a [u8], &'a [u8])>;

fn fields(line: &[u8]) -> Fields<'_> {
    let mut fields = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        let blanks = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let word = rest[blanks..].iter().take_while(|b| !b.is_ascii_whitespace()).count();
        fields.push((&rest[..blanks], &rest[blanks..blanks + word]));
        rest = &rest[blanks + word..];
    }
    fields
}

fn number(word: &[u8]) -> Option<u128> {
    std::str::from_utf8(word).ok().filter(|w| w.bytes().all(|b| b.is_ascii_digit()))?.parse().ok()
}

fn sum_texts(outputs: &[Vec<u8>]) -> Vec<u8> {
    let present: Vec<&Vec<u8>> = outputs.iter().filter(|o| !o.is_empty()).collect();
    let Some(first) = present.first() else { return Vec::new() };
    let parsed: Vec<Vec<Fields<'_>>> =
        present.iter().map(|o| o.split_inclusive(|&b| b == b'\n').map(fields).collect()).collect();
    let template = &parsed[0];
    let same_shape = parsed.iter().all(|lines| {
        lines.len() == template.len()
            && lines.iter().zip(template).all(|(line, model)| {
                line.len() == model.len()
                    && line.iter().zip(model).all(|((_, word), (_, model))| {
                        word == model || (number(word).is_some() && number(model).is_some())
                    })
            })
    });
    if !same_shape {
        return outputs.concat();
    }
    let mut merged = Vec::with_capacity(first.len());
    for (l, line) in template.iter().enumerate() {
        for (f, (blanks, word)) in line.iter().enumerate() {
            let Some(_) = number(word) else {
                merged.extend_from_slice(blanks);
                merged.extend_from_slice(word);
                continue;
            };
            let total: u128 = parsed.iter().filter_map(|lines| number(lines[l][f].1)).sum();
            let digits = total.to_string();
            let width = blanks.len() + word.len();
            let pad = width.saturating_sub(digits.len()).max(usize::from(!blanks.is_empty()));
            merged.extend(std::iter::repeat_n(b' ', pad));
            merged.extend_from_slice(digits.as_bytes());
        }
    }
    merged
}

/// `merge:uniq_count`: the copies' `uniq -c` lines in order, where a line that ends one copy's
/// output and starts the next one's (a run cut by a seam) becomes one line with the counts added.
/// Fails on a line longer than `max_line` bytes (a line is held whole to be compared).
pub async fn uniq_count<R, W>(readers: Vec<R>, out: &mut W, max_line: u64) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + ?Sized,
{
    let mut pending: Option<(u128, Vec<u8>)> = None;
    let mut line = Vec::new();
    for input in readers {
        let mut input = tokio::io::BufReader::with_capacity(256 * 1024, input);
        loop {
            line.clear();
            let read = (&mut input).take(max_line.saturating_add(1)).read_until(b'\n', &mut line).await?;
            if read == 0 {
                break;
            }
            if read as u64 > max_line {
                let message = format!("a line of the outputs to merge exceeds {max_line} bytes");
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, message));
            }
            match counted(&line) {
                Some((count, text)) => match &mut pending {
                    Some((total, seen)) if seen == text => *total += count,
                    _ => {
                        if let Some((total, seen)) = pending.replace((count, text.to_vec())) {
                            write_counted(out, total, &seen).await?;
                        }
                    }
                },
                None => {
                    if let Some((total, seen)) = pending.take() {
                        write_counted(out, total, &seen).await?;
                    }
                    out.write_all(&line).await?;
                }
            }
        }
    }
    if let Some((total, seen)) = pending {
        write_counted(out, total, &seen).await?;
    }
    out.flush().await
}

/// `   12 text\n` as (12, `text\n`): GNU uniq's `%7d ` and the line.
fn counted(line: &[u8]) -> Option<(u128, &[u8])> {
    let blanks = line.iter().take_while(|&&b| b == b' ').count();
    let digits = line[blanks..].iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = line[blanks + digits..].strip_prefix(b" ")?;
    Some((number(&line[blanks..blanks + digits])?, rest))
}

async fn write_counted<W: AsyncWrite + Unpin + ?Sized>(out: &mut W, count: u128, text: &[u8]) -> std::io::Result<()> {
    out.write_all(format!("{count:>7} ").as_bytes()).await?;
    out.write_all(text).await
}

#[cfg(test)]
mod tests {
    use super::sum_texts;

    fn merged(outputs: &[&str], merge: &str, limit: u64) -> std::io::Result<String> {
        let readers: Vec<&[u8]> = outputs.iter().map(|o| o.as_bytes()).collect();
        let mut out = Vec::new();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            match merge {
                "sum" => super::sum(readers, &mut out, limit).await,
                _ => super::uniq_count(readers, &mut out, limit).await,
            }
        })?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn what_a_merge_holds_is_bounded() {
        assert_eq!(
            merged(&["      3 a\n      1 b\n", "      2 b\n      1 c\n"], "uniq_count", 20).unwrap(),
            "      3 a\n      3 b\n      1 c\n"
        );
        let long = format!("      1 {}\n", "x".repeat(30));
        let error = merged(&[&long], "uniq_count", 20).unwrap_err();
        assert!(error.to_string().contains("exceeds 20 bytes"), "{error}");
        assert_eq!(merged(&["3\n", "4\n"], "sum", 4).unwrap(), "7\n");
        let error = merged(&["3\n", "4\n", "5\n"], "sum", 4).unwrap_err();
        assert!(error.to_string().contains("exceed 4 bytes"), "{error}");
    }

    fn sum(outputs: &[&str]) -> String {
        let outputs: Vec<Vec<u8>> = outputs.iter().map(|o| o.as_bytes().to_vec()).collect();
        String::from_utf8(sum_texts(&outputs)).unwrap()
    }

    #[test]
    fn sums_keep_printfs_field_widths() {
        assert_eq!(sum(&["3\n", "4\n"]), "7\n");
        assert_eq!(sum(&["      2       2       4\n", "      1       3       9\n"]), "      3       5      13\n");
        assert_eq!(sum(&["9999999 9999999 9999999\n", "      1       1       1\n"]), "10000000 10000000 10000000\n");
        assert_eq!(sum(&["", "5\n", ""]), "5\n");
    }

    #[test]
    fn outputs_of_another_shape_are_written_as_they_came() {
        assert_eq!(sum(&["3\n", "wc: x: No such file\n"]), "3\nwc: x: No such file\n");
        assert_eq!(sum(&["1 2\n", "3\n"]), "1 2\n3\n");
    }
}
