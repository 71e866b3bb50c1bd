//! Native values one at a time ([`super::parse_message`]) and as a list
//! ([`parse_values`]): what a server receives when a client sends a batch of
//! messages in a provider format.

use super::fields::{FieldError, Path};
use super::raw::Node;
use super::{Format, ai_sdk_ui, anthropic, keep, openai, responses, stowage};
use crate::model::NewMessage;

/// A value of a list that cannot be mapped: its index in the list, the field
/// within it (`(line)` for the value itself) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("[{index}] {field}: {reason}")]
pub struct ValueError {
    pub index: usize,
    pub field: String,
    pub reason: String,
}

impl ValueError {
    fn at(index: usize, e: FieldError) -> Self {
        Self { index, field: e.field, reason: e.reason }
    }
}

/// The JSON tree of one value.
pub(super) fn parse_json(text: &str) -> Result<Node<'_>, FieldError> {
    Node::parse(text).map_err(|e| Path::root().error(format!("not valid JSON: {e}")))
}

/// The messages of one value; `after_assistant` when it is a UIMessage that
/// follows an assistant UIMessage in a list (it then starts a UIMessage of its
/// own when rendered, instead of joining the one before).
pub(super) fn parse_node(
    format: Format,
    node: &Node<'_>,
    text: &str,
    after_assistant: bool,
) -> Result<Vec<NewMessage>, FieldError> {
    Ok(match format {
        Format::Stowage => vec![stowage::parse_message(node, text)?],
        Format::OpenAi => vec![keep::parse_one(node, openai::parse_group)?],
        Format::Anthropic => vec![keep::parse_one(node, anthropic::parse_group)?],
        Format::OpenAiResponses => vec![keep::parse_one(node, responses::parse_group)?],
        Format::AiSdkUi => ai_sdk_ui::parse_value(node, after_assistant)?,
    })
}

/// Converts a list of native values, in order: each as
/// [`parse_message`](super::parse_message) converts it, except that a list
/// keeps its UIMessage boundaries. Rendering groups a run of assistant messages
/// into one UIMessage, so an assistant UIMessage right after another one is
/// marked to start anew (as the UIMessages of a line are): rendering the
/// messages gives back the same UIMessages, not one merged. The first bad value
/// is an error naming its index and field.
pub fn parse_values<S: AsRef<str>>(format: Format, texts: &[S]) -> Result<Vec<NewMessage>, ValueError> {
    let mut messages = Vec::with_capacity(texts.len());
    let mut after_assistant = false;
    for (index, text) in texts.iter().enumerate() {
        let text = text.as_ref();
        let node = parse_json(text).map_err(|e| ValueError::at(index, e))?;
        messages.extend(parse_node(format, &node, text, after_assistant).map_err(|e| ValueError::at(index, e))?);
        after_assistant = format == Format::AiSdkUi && ai_sdk_ui::is_assistant(&node);
    }
    Ok(messages)
}
