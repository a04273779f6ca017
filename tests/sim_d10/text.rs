//! Look-alike spellings: ways of writing a word that a human reads as that word (SPEC's "text as
//! seen"), and the encodings and line ends tools write. Each spelling is chosen by the simulator
//! for a hostile value; the reference reading treats every one of them as the plain word.

/// How a hostile word is spelled on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Spell {
    Plain,
    /// `**WORD**` (Markdown only).
    Bold,
    /// `<b>WORD</b>` (Markdown only).
    HtmlBold,
    /// The first letter as a decimal character reference `&#70;` (Markdown only).
    Entity,
    /// Fullwidth forms (`ＦＡＩＬ`), folded by NFKC.
    Fullwidth,
    /// One letter replaced by its Cyrillic look-alike (`FAІL`).
    Cyrillic,
    /// A zero-width space inside the word.
    ZeroWidth,
    /// A NUL inside the word (JSON: the `\u0000` escape).
    Nul,
    /// Right-to-left override: the letters stored reversed, displayed in order.
    Bidi,
    /// Small capitals (`ꜰᴀɪʟ`).
    SmallCaps,
}

impl Spell {
    pub const MARKDOWN: &'static [Spell] = &[
        Spell::Plain,
        Spell::Bold,
        Spell::HtmlBold,
        Spell::Entity,
        Spell::Fullwidth,
        Spell::Cyrillic,
        Spell::ZeroWidth,
        Spell::Nul,
        Spell::Bidi,
        Spell::SmallCaps,
    ];
    /// Spellings that mean the same inside a JSON string (markup and entities do not).
    pub const JSON: &'static [Spell] = &[
        Spell::Plain,
        Spell::Fullwidth,
        Spell::Cyrillic,
        Spell::ZeroWidth,
        Spell::Nul,
        Spell::Bidi,
        Spell::SmallCaps,
    ];
    /// Spellings for words in plain prose (reports, prompts): Markdown's minus the NUL (which some
    /// tools would treat as binary) and the entity (also kept: it is Markdown).
    pub fn tag(self) -> &'static str {
        match self {
            Spell::Plain => "spell:plain",
            Spell::Bold => "spell:bold",
            Spell::HtmlBold => "spell:html-bold",
            Spell::Entity => "spell:entity",
            Spell::Fullwidth => "spell:fullwidth",
            Spell::Cyrillic => "spell:cyrillic",
            Spell::ZeroWidth => "spell:zero-width",
            Spell::Nul => "spell:nul",
            Spell::Bidi => "spell:bidi",
            Spell::SmallCaps => "spell:small-caps",
        }
    }
}

fn cyrillic(c: char) -> Option<char> {
    Some(match c {
        'a' => 'а',
        'c' => 'с',
        'e' => 'е',
        'o' => 'о',
        'p' => 'р',
        'x' => 'х',
        'y' => 'у',
        'i' => 'і',
        's' => 'ѕ',
        'j' => 'ј',
        'A' => 'А',
        'B' => 'В',
        'C' => 'С',
        'E' => 'Е',
        'H' => 'Н',
        'I' => 'І',
        'K' => 'К',
        'M' => 'М',
        'O' => 'О',
        'P' => 'Р',
        'T' => 'Т',
        'X' => 'Х',
        'S' => 'Ѕ',
        _ => return None,
    })
}

fn small_cap(c: char) -> char {
    match c.to_ascii_lowercase() {
        'a' => 'ᴀ',
        'b' => 'ʙ',
        'c' => 'ᴄ',
        'd' => 'ᴅ',
        'e' => 'ᴇ',
        'f' => 'ꜰ',
        'g' => 'ɢ',
        'h' => 'ʜ',
        'i' => 'ɪ',
        'j' => 'ᴊ',
        'k' => 'ᴋ',
        'l' => 'ʟ',
        'm' => 'ᴍ',
        'n' => 'ɴ',
        'o' => 'ᴏ',
        'p' => 'ᴘ',
        'r' => 'ʀ',
        's' => 'ꜱ',
        't' => 'ᴛ',
        'u' => 'ᴜ',
        'v' => 'ᴠ',
        'w' => 'ᴡ',
        'y' => 'ʏ',
        'z' => 'ᴢ',
        other => other,
    }
}

/// `word` spelled as `spell` in Markdown (or plain text).
pub fn markdown(word: &str, spell: Spell) -> String {
    match spell {
        Spell::Plain => word.to_string(),
        Spell::Bold => format!("**{word}**"),
        Spell::HtmlBold => format!("<b>{word}</b>"),
        Spell::Entity => {
            let mut cs = word.chars();
            let first = cs.next().map(|c| format!("&#{};", c as u32));
            format!("{}{}", first.unwrap_or_default(), cs.as_str())
        }
        _ => shared(word, spell, "\u{0}"),
    }
}

/// `word` spelled as `spell` inside a JSON string literal (already escaped for JSON).
pub fn json(word: &str, spell: Spell) -> String {
    match spell {
        Spell::Nul => shared(word, Spell::Nul, "\\u0000"),
        Spell::ZeroWidth => shared(word, Spell::ZeroWidth, "\\u200b"),
        Spell::Bidi => format!("\\u202e{}\\u202c", word.chars().rev().collect::<String>()),
        Spell::Bold | Spell::HtmlBold | Spell::Entity => word.to_string(),
        _ => shared(word, spell, ""),
    }
}

fn shared(word: &str, spell: Spell, nul: &str) -> String {
    match spell {
        Spell::Fullwidth => word
            .chars()
            .map(|c| {
                if c.is_ascii_graphic() {
                    char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap_or(c)
                } else {
                    c
                }
            })
            .collect(),
        Spell::Cyrillic => {
            let mut done = false;
            word.chars()
                .map(|c| match cyrillic(c) {
                    Some(l) if !done => {
                        done = true;
                        l
                    }
                    _ => c,
                })
                .collect()
        }
        Spell::ZeroWidth | Spell::Nul => {
            let ins = if spell == Spell::Nul { nul } else { "\u{200b}" };
            let mut cs = word.chars();
            let first: String = cs.next().into_iter().collect();
            let second: String = cs.next().into_iter().collect();
            format!("{first}{second}{ins}{}", cs.as_str())
        }
        Spell::Bidi => format!("\u{202e}{}\u{202c}", word.chars().rev().collect::<String>()),
        Spell::SmallCaps => word.chars().map(small_cap).collect(),
        _ => word.to_string(),
    }
}

/// How a tool encodes a text file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    Utf8,
    /// Windows line ends, UTF-8.
    Crlf,
    /// What Windows PowerShell 5.1's `Out-File` writes: UTF-16LE with a BOM and CRLF.
    Utf16Bom,
}

pub fn encode(text: &str, enc: Encoding) -> Vec<u8> {
    match enc {
        Encoding::Utf8 => text.as_bytes().to_vec(),
        Encoding::Crlf => crlf(text).into_bytes(),
        Encoding::Utf16Bom => {
            let mut out = vec![0xFF, 0xFE];
            for u in crlf(text).encode_utf16() {
                out.extend_from_slice(&u.to_le_bytes());
            }
            out
        }
    }
}

fn crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}
