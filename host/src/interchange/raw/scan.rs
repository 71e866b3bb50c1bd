//! The scanner behind [`Node::parse`]: splits text serde_json has already
//! validated into a [`Node`] tree that borrows its leaves and remembers the
//! source text of every object and array.

use std::borrow::Cow;

use super::{Array, Node, Object, decode_string};

/// Splits text that serde_json has already validated as one JSON value.
pub(super) struct Scanner<'a> {
    pub(super) text: &'a str,
    pub(super) at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected `{}` at byte {}", byte as char, self.at))
        }
    }

    fn slice(&self, start: usize) -> Result<&'a str, String> {
        self.text.get(start..self.at).ok_or_else(|| format!("bad slice at byte {start}"))
    }

    pub(super) fn value(&mut self) -> Result<Node<'a>, String> {
        self.skip_space();
        let start = self.at;
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                self.skip_space();
                if self.peek() == Some(b'}') {
                    self.at += 1;
                } else {
                    loop {
                        self.skip_space();
                        let literal = self.string()?;
                        let key = decode_string(literal).map_err(|e| format!("a key is not valid text ({e})"))?;
                        self.expect(b':')?;
                        let value = self.value()?;
                        members.push((key, value));
                        self.skip_space();
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(b'}') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(format!("unexpected byte at {}", self.at)),
                        }
                    }
                }
                Ok(Node::Object(Object { members, raw: Some(self.slice(start)?) }))
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.skip_space();
                if self.peek() == Some(b']') {
                    self.at += 1;
                } else {
                    loop {
                        items.push(self.value()?);
                        self.skip_space();
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(b']') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(format!("unexpected byte at {}", self.at)),
                        }
                    }
                }
                Ok(Node::Array(Array { items, raw: Some(self.slice(start)?) }))
            }
            Some(b'"') => Ok(Node::Leaf(Cow::Borrowed(self.string()?))),
            Some(_) => {
                while !matches!(self.peek(), None | Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')) {
                    self.at += 1;
                }
                Ok(Node::Leaf(Cow::Borrowed(self.slice(start)?)))
            }
            None => Err("unexpected end".into()),
        }
    }

    /// A string literal, quotes included.
    fn string(&mut self) -> Result<&'a str, String> {
        let start = self.at;
        if self.peek() != Some(b'"') {
            return Err(format!("expected a string at byte {start}"));
        }
        self.at += 1;
        loop {
            match self.peek() {
                Some(b'\\') => self.at += 2,
                Some(b'"') => {
                    self.at += 1;
                    return self.slice(start);
                }
                Some(_) => self.at += 1,
                None => return Err("unterminated string".into()),
            }
        }
    }
}
