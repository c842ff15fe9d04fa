//! Where a value is in a scenario file: the line and column of the value at a path of keys and
//! array indexes, read from the file's text, so that `gates` can point at a misconfigured
//! oracle's very key.

/// The 1-based line and column (in characters) where the value at `path` starts in the JSON
/// `text` — or, when the path goes further than the text, where its deepest existing part
/// starts (the whole text's, when not even the first segment is there). A segment is an object
/// key, or an array index written in decimal. `None` when the text is not JSON.
pub(crate) fn locate(text: &str, path: &[&str]) -> Option<(usize, usize)> {
    let mut at = Reader {
        b: text.as_bytes(),
        i: 0,
    };
    let found = at.find(path).ok().flatten()?;
    let before = &text[..found];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    Some((line, column))
}

struct Reader<'t> {
    b: &'t [u8],
    i: usize,
}

/// The text is not JSON where the reader stood.
struct NotJson;

impl Reader<'_> {
    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        let there = self.b.get(self.i) == Some(&c);
        self.i += usize::from(there);
        there
    }

    /// The offset of the value at `path` from here (its deepest existing part).
    fn find(&mut self, path: &[&str]) -> Result<Option<usize>, NotJson> {
        self.ws();
        let start = self.i;
        let Some((first, rest)) = path.split_first() else {
            self.skip()?;
            return Ok(Some(start));
        };
        let deeper = match self.b.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut found = None;
                while !self.eat(b'}') {
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return Err(NotJson);
                    }
                    match key == *first && found.is_none() {
                        true => found = Some(self.find(rest)?),
                        false => self.skip()?,
                    }
                    self.eat(b',');
                }
                found
            }
            Some(b'[') => {
                self.i += 1;
                let wanted = first.parse::<usize>().ok();
                let (mut k, mut found) = (0, None);
                while !self.eat(b']') {
                    match Some(k) == wanted {
                        true => found = Some(self.find(rest)?),
                        false => self.skip()?,
                    }
                    k += 1;
                    self.eat(b',');
                }
                found
            }
            _ => {
                self.skip()?;
                None
            }
        };
        Ok(Some(deeper.flatten().unwrap_or(start)))
    }

    /// A string's content (escapes left as written: keys are compared as their plain text).
    fn string(&mut self) -> Result<String, NotJson> {
        self.ws();
        if self.b.get(self.i) != Some(&b'"') {
            return Err(NotJson);
        }
        let start = self.i + 1;
        self.skip()?;
        let raw = &self.b[start..self.i - 1];
        Ok(String::from_utf8_lossy(raw).into_owned())
    }

    /// Skips one value.
    fn skip(&mut self) -> Result<(), NotJson> {
        self.ws();
        let mut depth = 0usize;
        loop {
            self.ws();
            let c = *self.b.get(self.i).ok_or(NotJson)?;
            self.i += 1;
            match c {
                b'"' => loop {
                    match *self.b.get(self.i).ok_or(NotJson)? {
                        b'\\' => self.i += 2,
                        b'"' => {
                            self.i += 1;
                            break;
                        }
                        _ => self.i += 1,
                    }
                },
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth = depth.checked_sub(1).ok_or(NotJson)?,
                _ => {
                    // A scalar runs to the next delimiter.
                    while self.b.get(self.i).is_some_and(|c| {
                        !matches!(c, b',' | b'}' | b']') && !c.is_ascii_whitespace()
                    }) {
                        self.i += 1;
                    }
                }
            }
            if depth == 0 {
                return Ok(());
            }
            self.ws();
            if matches!(self.b.get(self.i), Some(b',' | b':')) {
                self.i += 1;
            }
        }
    }
}

/// The segments of a configuration key as oracles name them (`calls[2].args.city`, `args.a.0`).
pub(crate) fn segments(key: &str) -> Vec<String> {
    key.replace('[', ".")
        .replace(']', "")
        .split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_found_at_its_line_and_column_or_its_deepest_existing_part() {
        let text = "[\n {\"id\": \"a\"},\n {\"id\": \"b\",\n  \"oracles\": [\n   {\"type\": \"tool-args\", \"args\": {\"x\": {\"$oneof\": [1]}}},\n   {\"type\": \"x\", \"s\": \"a\\\"]}\"}\n  ]}\n]\n";
        assert_eq!(
            locate(text, &["1", "oracles", "0", "args", "x"]),
            Some((5, 40))
        );
        assert_eq!(locate(text, &["1", "oracles", "1", "s"]), Some((6, 23)));
        // Past what the text has: its deepest existing part.
        assert_eq!(
            locate(text, &["1", "oracles", "0", "calls", "3"]),
            Some((5, 4))
        );
        assert_eq!(locate(text, &["7"]), Some((1, 1)));
        assert_eq!(locate("{\"a\": [1, 2", &["a", "1"]), None);
        assert_eq!(
            segments("calls[2].args.city"),
            vec!["calls", "2", "args", "city"]
        );
    }
}
