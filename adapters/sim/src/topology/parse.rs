//! The topology text format (grammar in the crate docs): a tokenizer that
//! keeps byte offsets, and a statement parser that reports the position of
//! the first problem.

use ur_api::MemoryConnection;

use super::{DeviceSpec, PairRule, Topology, TopologyBuilder, TopologyError};
use crate::conv;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Colon,
    Comma,
    Eq,
    Arrow,
    BiArrow,
    End,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("`{w}`"),
            Tok::Colon => "`:`".into(),
            Tok::Comma => "`,`".into(),
            Tok::Eq => "`=`".into(),
            Tok::Arrow => "`->`".into(),
            Tok::BiArrow => "`<->`".into(),
            Tok::End => "the end of the statement".into(),
        }
    }
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '@')
}

struct Lexer<'a> {
    text: &'a str,
}

impl Lexer<'_> {
    fn error(&self, offset: usize, reason: impl Into<String>) -> TopologyError {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        TopologyError::Syntax {
            line,
            column,
            offset,
            reason: reason.into(),
        }
    }

    /// Tokens with their byte offsets; statement ends (`;`, newline, end of
    /// text) are [`Tok::End`].
    fn tokens(&self) -> Result<Vec<(usize, Tok)>, TopologyError> {
        let s = self.text;
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(c) = s[i..].chars().next() {
            let rest = &s[i..];
            let start = i;
            if c == '#' {
                i += rest.find('\n').unwrap_or(rest.len());
                continue;
            }
            if c == ';' || c == '\n' {
                out.push((start, Tok::End));
                i += 1;
                continue;
            }
            if c.is_whitespace() {
                i += c.len_utf8();
                continue;
            }
            let (tok, len) = if rest.starts_with("<->") {
                (Tok::BiArrow, 3)
            } else if rest.starts_with("->") {
                (Tok::Arrow, 2)
            } else if c == ':' {
                (Tok::Colon, 1)
            } else if c == ',' {
                (Tok::Comma, 1)
            } else if c == '=' {
                (Tok::Eq, 1)
            } else if word_char(c) {
                let mut end = 0;
                for (j, ch) in rest.char_indices() {
                    if !word_char(ch) || rest[j..].starts_with("->") || rest[j..].starts_with("<->") {
                        break;
                    }
                    end = j + ch.len_utf8();
                }
                (Tok::Word(rest[..end].to_owned()), end)
            } else {
                return Err(self.error(start, format!("unexpected character `{c}`")));
            };
            out.push((start, tok));
            i += len;
        }
        out.push((s.len(), Tok::End));
        Ok(out)
    }
}

struct Parser<'a> {
    lex: Lexer<'a>,
    toks: Vec<(usize, Tok)>,
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].1
    }

    fn offset(&self) -> usize {
        self.toks[self.pos].0
    }

    fn next(&mut self) -> (usize, Tok) {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn unexpected(&self, wanted: &str) -> TopologyError {
        self.lex.error(
            self.offset(),
            format!("expected {wanted}, found {}", self.peek().describe()),
        )
    }

    fn word(&mut self, wanted: &str) -> Result<(usize, String), TopologyError> {
        match self.peek().clone() {
            Tok::Word(w) => {
                let at = self.offset();
                self.next();
                Ok((at, w))
            }
            _ => Err(self.unexpected(wanted)),
        }
    }

    fn name(&mut self, wanted: &str) -> Result<String, TopologyError> {
        let (at, w) = self.word(wanted)?;
        if super::valid_name(&w) {
            Ok(w)
        } else {
            Err(self
                .lex
                .error(at, format!("`{w}` is not a valid name (letters, digits, _ - .)")))
        }
    }

    /// `key=value` pairs until a token that is not a word.
    fn settings(&mut self) -> Result<Vec<(usize, String, usize, String)>, TopologyError> {
        let mut out = Vec::new();
        while let Tok::Word(_) = self.peek() {
            let (kat, key) = self.word("a setting")?;
            if self.peek() != &Tok::Eq {
                return Err(self.unexpected(&format!("`=` after `{key}`")));
            }
            self.next();
            let (vat, value) = self.word(&format!("a value for `{key}`"))?;
            out.push((kat, key, vat, value));
        }
        Ok(out)
    }

    fn end_of_statement(&mut self) -> Result<(), TopologyError> {
        match self.peek() {
            Tok::End => {
                self.next();
                Ok(())
            }
            _ => Err(self.unexpected("the end of the statement (`;` or a new line)")),
        }
    }

    fn device(&mut self) -> Result<DeviceSpec, TopologyError> {
        let mut d = DeviceSpec::new(self.name("a device name")?);
        for (kat, key, vat, value) in self.settings()? {
            let bad = |reason: String| self.lex.error(vat, reason);
            match key.as_str() {
                "type" => {
                    d.device_type = conv::device_type_from_name(&value)
                        .ok_or_else(|| bad(format!("unknown device type `{value}` (gpu, cpu, acc, custom)")))?;
                }
                "mem" => d.memory = conv::parse_size(&value).map_err(bad)?,
                "bw" => d.link.bandwidth = conv::parse_rate(&value).map_err(bad)?,
                "lat" => d.link.latency = conv::parse_duration(&value).map_err(bad)?,
                _ => {
                    return Err(self
                        .lex
                        .error(kat, format!("unknown device setting `{key}` (type, mem, bw, lat)")))
                }
            }
        }
        Ok(d)
    }

    fn platform(&mut self, b: TopologyBuilder) -> Result<TopologyBuilder, TopologyError> {
        let name = self.name("a platform name")?;
        if self.peek() != &Tok::Colon {
            return Err(self.unexpected("`:` after the platform name"));
        }
        self.next();
        let mut b = b.platform(name);
        loop {
            b = b.device(self.device()?);
            match self.peek() {
                Tok::Comma => {
                    self.next();
                }
                _ => break,
            }
        }
        self.end_of_statement()?;
        Ok(b)
    }

    fn pair(&mut self, b: TopologyBuilder, names: &[String]) -> Result<TopologyBuilder, TopologyError> {
        let known = |p: &Self, at: usize, n: &str| {
            if names.iter().any(|m| m == n) {
                Ok(())
            } else {
                Err(p
                    .lex
                    .error(at, format!("unknown device `{n}` (devices must be declared first)")))
            }
        };
        let src_at = self.offset();
        let src = self.name("a device name")?;
        known(self, src_at, &src)?;
        let both = match self.next().1 {
            Tok::Arrow => false,
            Tok::BiArrow => true,
            _ => {
                self.pos -= 1;
                return Err(self.unexpected("`->` or `<->`"));
            }
        };
        let dst_at = self.offset();
        let dst = self.name("a device name")?;
        known(self, dst_at, &dst)?;
        let mut rule = PairRule::new();
        for (kat, key, vat, value) in self.settings()? {
            let bad = |reason: String| self.lex.error(vat, reason);
            let conn = |v: &str| -> Result<MemoryConnection, TopologyError> {
                conv::connection_from_name(v)
                    .ok_or_else(|| bad(format!("unknown connection `{v}` (unified, migratable, none)")))
            };
            match key.as_str() {
                "same" => rule.same_context = Some(conn(&value)?),
                "other" => rule.other_context = Some(conn(&value)?),
                "peer" => {
                    let (rate, lat) = value.split_once('@').unwrap_or((&value, "0"));
                    let link = super::LinkSpec::new(
                        conv::parse_rate(rate).map_err(bad)?,
                        conv::parse_duration(lat).map_err(bad)?,
                    );
                    rule.peer_link = Some(link);
                }
                _ => {
                    return Err(self
                        .lex
                        .error(kat, format!("unknown pair setting `{key}` (same, other, peer)")))
                }
            }
        }
        self.end_of_statement()?;
        let b = b.pair(src.clone(), dst.clone(), rule);
        Ok(if both { b.pair(dst, src, rule) } else { b })
    }
}

pub(super) fn parse(text: &str) -> Result<Topology, TopologyError> {
    let lex = Lexer { text };
    let toks = lex.tokens()?;
    let mut p = Parser { lex, toks, pos: 0 };
    let mut b = Topology::builder();
    let mut names: Vec<String> = Vec::new();
    let mut platforms: Vec<(usize, String)> = Vec::new();
    loop {
        match p.peek().clone() {
            Tok::End if p.pos + 1 == p.toks.len() => break,
            Tok::End => {
                p.next();
            }
            Tok::Word(w) if w == "platform" => {
                p.next();
                let at = p.offset();
                b = p.platform(b)?;
                let plat = b.platforms.last().expect("platform() adds one");
                if let Some((_, _)) = platforms.iter().find(|(_, n)| *n == plat.name) {
                    return Err(p.lex.error(at, format!("platform `{}` named twice", plat.name)));
                }
                platforms.push((at, plat.name.clone()));
                for d in &plat.devices {
                    if names.contains(&d.name) {
                        return Err(p.lex.error(at, format!("device `{}` named twice", d.name)));
                    }
                    names.push(d.name.clone());
                }
            }
            Tok::Word(w) if w == "pair" => {
                p.next();
                b = p.pair(b, &names)?;
            }
            Tok::Word(w) if w == "links" => {
                p.next();
                let (at, v) = p.word("`on` or `off`")?;
                b = b.link_model(match v.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(p.lex.error(at, format!("expected `on` or `off`, found `{v}`"))),
                });
                p.end_of_statement()?;
            }
            _ => return Err(p.unexpected("`platform`, `pair` or `links`")),
        }
    }
    if platforms.is_empty() {
        return Err(p.lex.error(0, "no platforms (start with `platform NAME: DEVICE`)"));
    }
    b.build()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ur_api::DeviceType;
    use MemoryConnection::*;

    use super::*;

    #[test]
    fn parses_a_full_example() {
        let t = Topology::parse(
            "# two GPUs and an FPGA\n\
             platform gpus: g0 type=gpu mem=64MiB bw=1GiB/s lat=10us, g1 mem=1GB\n\
             platform fpga: f0 type=fpga mem=16MiB\n\
             pair g0<->g1 other=migratable peer=32GiB/s@1us; pair g0->f0 other=migratable\n\
             pair f0->g0 other=none\n\
             links on",
        )
        .unwrap();
        assert_eq!(t.platforms().len(), 2);
        let (_, g0) = t.devices().next().unwrap();
        assert_eq!(g0.memory, 64 << 20);
        assert_eq!(g0.link.bandwidth, 1 << 30);
        assert_eq!(g0.link.latency, Duration::from_micros(10));
        let (_, g1) = t.devices().nth(1).unwrap();
        assert_eq!(g1.memory, 1_000_000_000);
        assert_eq!(g1.link, crate::LinkSpec::default());
        assert_eq!(t.devices().nth(2).unwrap().1.device_type, DeviceType::Accelerator);
        assert_eq!(t.connection(0, 1, false), Migratable);
        assert_eq!(t.connection(1, 0, false), Migratable);
        assert_eq!(t.connection(0, 2, false), Migratable);
        assert_eq!(t.connection(2, 0, false), None);
        assert_eq!(
            t.pair_rule(1, 0).unwrap().peer_link,
            Some(crate::LinkSpec::new(32 << 30, Duration::from_micros(1)))
        );
        assert!(t.link_model());
    }

    #[test]
    fn names_may_contain_dashes_next_to_arrows() {
        let t = Topology::parse("platform p: dev-a, dev-b; pair dev-a->dev-b same=none").unwrap();
        assert_eq!(t.connection(0, 1, true), None);
        assert_eq!(t.connection(1, 0, true), Migratable);
    }

    fn syntax(text: &str) -> (usize, usize, String) {
        match Topology::parse(text) {
            Err(TopologyError::Syntax {
                line, column, reason, ..
            }) => (line, column, reason),
            other => panic!("expected a syntax error for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn errors_carry_position_and_reason() {
        let (l, c, r) = syntax("platform p: d0 type=tpu");
        assert_eq!((l, c), (1, 21));
        assert!(r.contains("unknown device type `tpu`"), "{r}");

        let (l, c, r) = syntax("platform p: d0\npair d0->zz");
        assert_eq!((l, c), (2, 10));
        assert!(r.contains("unknown device `zz`"), "{r}");

        let (l, c, r) = syntax("platform p d0");
        assert_eq!((l, c), (1, 12));
        assert!(r.contains("`:`"), "{r}");

        let (_, _, r) = syntax("platform p: d0 mem=lots");
        assert!(r.contains("not a size"), "{r}");
        let (_, _, r) = syntax("platform p: d0 speed=1");
        assert!(r.contains("unknown device setting `speed`"), "{r}");
        let (_, _, r) = syntax("platform p: d0; pair d0->d0 same=maybe");
        assert!(r.contains("unknown connection `maybe`"), "{r}");
        let (_, _, r) = syntax("platform p: d0; links sometimes");
        assert!(r.contains("`on` or `off`"), "{r}");
        let (_, _, r) = syntax("device d0");
        assert!(r.contains("`platform`"), "{r}");
        let (_, _, r) = syntax("platform p: d0 $");
        assert!(r.contains("unexpected character"), "{r}");
        let (_, _, r) = syntax("platform p: d0; platform q: d0");
        assert!(r.contains("named twice"), "{r}");
        let (_, _, r) = syntax("# nothing\n");
        assert!(r.contains("no platforms"), "{r}");
        let (_, _, r) = syntax("platform p: d0 mem");
        assert!(r.contains("`=` after `mem`"), "{r}");
        let (_, _, r) = syntax("platform p: d0 bw=5GiB");
        assert!(r.contains("not a rate"), "{r}");
    }

    #[test]
    fn blank_statements_and_comments_are_ignored() {
        let t = Topology::parse(";;\n  # c\nplatform p: d0 # trailing\n;\n").unwrap();
        assert_eq!(t.device_count(), 1);
    }
}
