export * from "./types.js";
export { StowageError, isStowageError } from "./errors.js";
export {
  StowageClient,
  segment,
  utf8HeaderValue,
  type StowageClientOptions,
  type RetryOptions,
  type CallOptions,
  type ListConversationsOptions,
  type FormatOptions,
  type ReadOptions,
  type AppendOptions,
  type ReplaceOptions,
  type LoadOptions,
  type TruncateOptions,
  type PopResult,
  type ListDisplayOptions,
  type SaveDisplayMessageOptions,
  type ToolStatusOptions,
  type ResolveToolResultOptions,
} from "./client.js";
export {
  EventStream,
  type EventsOptions,
  type ReconnectOptions,
  type StowageEvent,
  type DisplayChange,
  type LostEvents,
} from "./events.js";
export { SseParser, parseSseStream, type SseMessage } from "./sse.js";
export { loadChat, saveChat, type ChatMessage, type LoadChatOptions, type SaveChatOptions } from "./chat.js";
export type { paths, components, operations } from "./schema.js";
