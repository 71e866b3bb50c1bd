//! The record model: what integrators store and load, with a stable JSON form.
//!
//! Pure data. The WIT contract never sees these types directly: the host encodes
//! a message's content into opaque bytes (`crate::integrity::codec`) and keeps only
//! the fields adapters must query in the clear.

mod conversation;
mod display;
mod json;
mod message;
mod page;
mod part_json;

pub use self::conversation::{ConversationInfo, ConversationMeta, MetaPatch, Scope};
pub use self::display::{
    DisplayContext, DisplayEvent, DisplayPage, DisplayRecord, SweepReport, SyntheticMessage, ToolInfo, ToolStatus,
    ToolUpdate, content_type,
};
pub use self::json::JsonText;
pub use self::message::{MediaSource, Message, NewMessage, Part, Role, StopReason, Timestamp, Usage};
pub use self::page::{
    AppendOutcome, ConversationPage, LoadFrom, LoadRequest, OrphanPolicy, OrphanedCall, Page, RepairReport,
    TruncateOutcome,
};
