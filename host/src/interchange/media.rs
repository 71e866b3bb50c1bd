//! Media payloads: data URLs, base64 that must come back as written, audio formats.
//!
//! Base64 is decoded into bytes only when re-encoding the bytes gives back the
//! same text. A payload that decodes only leniently (line breaks, missing padding)
//! stays text: the media source is then the data URL itself, which every format
//! splits again on export. A payload with characters outside the base64
//! alphabet is refused.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::model::MediaSource;

pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decoded bytes when `text` is canonical base64; `Ok(None)` when it is base64
/// only leniently; an error for characters outside the alphabet.
pub fn decode(text: &str) -> Result<Option<Vec<u8>>, String> {
    if let Ok(bytes) = STANDARD.decode(text)
        && STANDARD.encode(&bytes) == text
    {
        return Ok(Some(bytes));
    }
    let body = text.trim_end_matches(|c: char| c == '=' || c.is_ascii_whitespace());
    match body.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '/') || c.is_ascii_whitespace())) {
        Some(bad) => Err(format!("invalid base64: unexpected character {bad:?}")),
        None => Ok(None),
    }
}

/// `(mime, base64 data)` of a `data:<mime>;base64,<data>` URL.
pub fn split_data_url(url: &str) -> Option<(&str, &str)> {
    url.strip_prefix("data:")?.split_once(";base64,")
}

pub fn data_url(mime: &str, data: &str) -> String {
    format!("data:{mime};base64,{data}")
}

/// A media source from a base64 payload: bytes when canonical, else the data URL.
pub fn source_from_base64(mime: &str, data: &str) -> Result<MediaSource, String> {
    Ok(match decode(data)? {
        Some(bytes) => MediaSource::Inline(bytes),
        None => MediaSource::Url(data_url(mime, data)),
    })
}

/// `(mime, source)` of a URL: a base64 data URL gives its own mime and bytes;
/// any other URL is kept with `default_mime`.
pub fn source_from_url(url: &str, default_mime: &str) -> Result<(String, MediaSource), String> {
    match split_data_url(url) {
        Some((mime, data)) => {
            let source = match decode(data)? {
                Some(bytes) => MediaSource::Inline(bytes),
                None => MediaSource::Url(url.to_owned()),
            };
            Ok((mime.to_owned(), source))
        }
        None => Ok((default_mime.to_owned(), MediaSource::Url(url.to_owned()))),
    }
}

/// The URL form of a source: the URL, or a data URL for bytes.
pub fn url_of(mime: &str, source: &MediaSource) -> String {
    match source {
        MediaSource::Url(url) => url.clone(),
        MediaSource::Inline(bytes) => data_url(mime, &encode(bytes)),
    }
}

/// `(mime, base64)` when the source has its bytes (inline, or a base64 data URL).
pub fn base64_of<'m>(mime: &'m str, source: &'m MediaSource) -> Option<(Cow<'m, str>, Cow<'m, str>)> {
    match source {
        MediaSource::Inline(bytes) => Some((Cow::Borrowed(mime), Cow::Owned(encode(bytes)))),
        MediaSource::Url(url) => split_data_url(url).map(|(mime, data)| (Cow::Borrowed(mime), Cow::Borrowed(data))),
    }
}

/// The OpenAI `input_audio.format` of a mime type.
pub fn audio_format(mime: &str) -> Option<&'static str> {
    match mime {
        "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
        "audio/mpeg" | "audio/mp3" => Some("mp3"),
        _ => None,
    }
}

/// The mime type of an OpenAI `input_audio.format`.
pub fn audio_mime(format: &str) -> Option<&'static str> {
    match format {
        "wav" => Some("audio/wav"),
        "mp3" => Some("audio/mpeg"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_base64_becomes_bytes() {
        assert_eq!(decode("aGk="), Ok(Some(b"hi".to_vec())));
        assert_eq!(decode("aGk"), Ok(None));
        assert_eq!(decode("aG\r\nk="), Ok(None));
        assert!(decode("@@not base64@@").is_err());
        assert!(decode("a-b_").is_err());
    }

    #[test]
    fn data_urls_split_and_rebuild() -> Result<(), String> {
        let (mime, source) = source_from_url("data:image/png;base64,aGk=", "image/*")?;
        assert_eq!((mime.as_str(), &source), ("image/png", &MediaSource::Inline(b"hi".to_vec())));
        assert_eq!(url_of(&mime, &source), "data:image/png;base64,aGk=");
        let lenient = "data:text/plain;base64,aGk";
        let (mime, source) = source_from_url(lenient, "x")?;
        assert_eq!(source, MediaSource::Url(lenient.into()));
        assert_eq!(base64_of(&mime, &source), Some((Cow::Borrowed("text/plain"), Cow::Borrowed("aGk"))));
        let (mime, source) = source_from_url("https://x/y.png", "image/*")?;
        assert_eq!((mime.as_str(), base64_of(&mime, &source)), ("image/*", None));
        Ok(())
    }
}
