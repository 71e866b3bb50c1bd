//! Content parts of Responses message items ↔ parts.

use super::super::fields::{self, Fields, Path, Result};
use super::super::media;
use super::super::parts::{finish, own_provider, provider, value_node};
use super::super::raw::Node;
use super::super::residue::{Markers, Residue};
use super::FORMAT;
use crate::model::{MediaSource, Part};

/// Whether a part sits inside a message item's `content` (rather than being an
/// item of its own).
pub fn is_content(part: &Part) -> bool {
    match part {
        Part::Text { .. } | Part::Media { .. } => true,
        Part::Provider { .. } => {
            own_provider(part, FORMAT).is_some_and(|(_, r)| r.markers.str("$in").as_deref() == Some("content"))
        }
        _ => false,
    }
}

/// A plain text part: no residue but (possibly) an item boundary.
pub fn plain(part: &Part) -> Option<&str> {
    let Part::Text { text, extra } = part else { return None };
    let residue = Residue::stored(extra.as_ref(), FORMAT);
    let only_item = residue.patch.is_none() && residue.markers.str("$refusal").is_none();
    only_item.then_some(text.as_str())
}

/// The content part a part derives (`None`: no Responses form).
pub fn content_part<'a>(part: &'a Part, markers: &Markers<'_>, assistant: bool) -> Option<Node<'a>> {
    let kind = |k: &str| ("type", Node::string(k));
    match part {
        Part::Text { text, .. } if markers.str("$refusal").as_deref() == Some("part") => {
            Some(Node::object(vec![kind("refusal"), ("refusal", Node::string(text))]))
        }
        Part::Text { text, .. } => {
            let name = if assistant { "output_text" } else { "input_text" };
            Some(Node::object(vec![kind(name), ("text", Node::string(text))]))
        }
        Part::Media { mime_type, source, name, .. } => media_part(mime_type, source, name.as_deref()),
        Part::Provider { .. } => own_provider(part, FORMAT).map(|(value, _)| value_node(value)),
        _ => None,
    }
}

fn media_part<'a>(mime: &str, source: &MediaSource, name: Option<&str>) -> Option<Node<'a>> {
    let kind = |k: &str| ("type", Node::string(k));
    if mime.starts_with("image/") {
        return Some(Node::object(vec![
            kind("input_image"),
            ("image_url", Node::string(&media::url_of(mime, source))),
            ("detail", Node::string("auto")),
        ]));
    }
    match media::base64_of(mime, source) {
        Some((data_mime, data)) => {
            if let Some(format) = media::audio_format(mime) {
                let audio = Node::object(vec![("data", Node::string(&data)), ("format", Node::string(format))]);
                return Some(Node::object(vec![kind("input_audio"), ("input_audio", audio)]));
            }
            let mut members =
                vec![kind("input_file"), ("file_data", Node::string(&media::data_url(&data_mime, &data)))];
            if let Some(name) = name {
                members.push(("filename", Node::string(name)));
            }
            Some(Node::object(members))
        }
        None => match source {
            MediaSource::Url(url) if !mime.starts_with("audio/") => {
                Some(Node::object(vec![kind("input_file"), ("file_url", Node::string(url))]))
            }
            _ => None,
        },
    }
}

/// A part from a content part of a message item.
pub fn read_content(item: &Node<'_>, path: &Path, assistant: bool) -> Result<Part> {
    let kind = fields::part_type(item, path)?;
    let mut markers = Markers::new();
    let opaque = || {
        let mut markers = Markers::new();
        markers.set_str("$in", "content");
        provider(FORMAT, item, path, markers)
    };
    let part = match kind.as_ref() {
        "input_text" | "output_text" => Part::text(Fields::of(item, path)?.str("text")?),
        "refusal" => {
            markers.set_str("$refusal", "part");
            Part::text(Fields::of(item, path)?.str("refusal")?)
        }
        "input_image" => {
            let f = Fields::of(item, path)?;
            let Some(url) = f.opt_str("image_url")? else { return opaque() };
            let (mime, source) = media::source_from_url(&url, "image/*").map_err(|e| f.at("image_url").error(e))?;
            Part::media(mime, source, None)
        }
        "input_file" => {
            let f = Fields::of(item, path)?;
            let name = f.opt_str("filename")?.map(|n| n.into_owned());
            match (f.opt_str("file_data")?, f.opt_str("file_url")?) {
                (Some(data), _) => {
                    let Some((mime, payload)) = media::split_data_url(&data) else { return opaque() };
                    let source = media::source_from_base64(mime, payload).map_err(|e| f.at("file_data").error(e))?;
                    Part::media(mime, source, name)
                }
                (None, Some(url)) => Part::media("application/octet-stream", MediaSource::Url(url.into_owned()), None),
                (None, None) => return opaque(),
            }
        }
        "input_audio" => {
            let f = Fields::of(item, path)?;
            let at = f.at("input_audio");
            let audio = Fields::of(f.member("input_audio")?, &at)?;
            let (data, format) = (audio.str("data")?, audio.str("format")?);
            let Some(mime) = media::audio_mime(&format) else { return opaque() };
            let source = media::source_from_base64(mime, &data).map_err(|e| audio.at("data").error(e))?;
            Part::media(mime, source, None)
        }
        _ => return opaque(),
    };
    match content_part(&part, &markers, assistant).map(Node::into_owned) {
        Some(derived) => finish(FORMAT, part, markers, Some(derived), item, path),
        None => opaque(),
    }
}
