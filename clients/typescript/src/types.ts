/**
 * Friendly names for the generated OpenAPI types (`schema.ts`, generated from
 * `server/openapi.json` by openapi-typescript — never edited by hand).
 */
import type { components, operations } from "./schema.js";

type Schemas = components["schemas"];

export type ConversationMeta = Schemas["ConversationMeta"];
/** A change to a conversation's meta: a member replaces, `null` clears, a member left out stays. */
export type ConversationMetaPatch = Schemas["ConversationMetaPatch"];
export type ConversationInfo = Schemas["ConversationInfo"];
export type ConversationPage = Schemas["ConversationPage"];
export type Scope = Schemas["Scope"];
export type Role = Schemas["Role"];
export type Part = Schemas["Part"];
export type TextPart = Schemas["TextPart"];
export type ThinkingPart = Schemas["ThinkingPart"];
export type ToolCallPart = Schemas["ToolCallPart"];
export type ToolResultPart = Schemas["ToolResultPart"];
export type MediaPart = Schemas["MediaPart"];
export type ProviderPart = Schemas["ProviderPart"];
export type Usage = Schemas["Usage"];
export type StopReason = Schemas["StopReason"];
/** A message to store (`id` optional: generated, or derived from an Idempotency-Key). */
export type NewMessage = Schemas["NewMessage"];
/** A stored message (`seq` contiguous from 1 per conversation). */
export type Message = Schemas["Message"];
export type AppendOutcome = Schemas["AppendOutcome"];
export type Replaced = Schemas["Replaced"];
export type OrphanedCall = Schemas["OrphanedCall"];
export type RepairReport = Schemas["RepairReport"];
export type Dropped = Schemas["Dropped"];
export type TruncateOutcome = Schemas["TruncateOutcome"];
export type Deleted = Schemas["Deleted"];
export type ToolStatus = Schemas["ToolStatus"];
export type DisplayRecord = Schemas["DisplayRecord"];
export type DisplayPage = Schemas["DisplayPage"];
export type Records = Schemas["Records"];
export type SyntheticRequest = Schemas["SyntheticRequest"];
export type RestoreRecord = Schemas["RestoreRecord"];
export type ToolStatusRequest = Schemas["ToolStatusRequest"];
export type ToolUpdate = Schemas["ToolUpdate"];
export type Health = Schemas["Health"];
export type DisplayEvent = Schemas["DisplayEvent"];
export type EventsLost = Schemas["EventsLost"];
/** The server's error envelope: `{"error":{"code","message","details"?}}`. */
export type ErrorBody = Schemas["Error"];
/** The stable machine codes of errors (never change meaning). */
export type ErrorCode = ErrorBody["error"]["code"];

/** Transcript formats of `?format=`: `stowage` (the default) and the provider formats. */
export type Format = NonNullable<components["parameters"]["Format"]>;
/** `?mode=` of answers carrying messages: `keep` (lossless, default) or `pure` (provider formats only). */
export type Mode = NonNullable<components["parameters"]["Mode"]>;
/** `?orphans=` of a page load: what to do with tool calls that have no result. */
export type OrphanPolicy = NonNullable<NonNullable<operations["loadMessages"]["parameters"]["query"]>["orphans"]>;

/** Every format the server knows (the `Format` parameter's enum). */
export const FORMATS: readonly Format[] = ["stowage", "openai", "anthropic", "openai-responses", "ai-sdk-ui"];

/** A JSON object as a provider format carries it. */
export type JsonObject = { [key: string]: unknown };

/** What a request item is in format `F`: a `NewMessage` for `stowage`, else the provider's own JSON object. */
export type MessageIn<F extends Format> = F extends "stowage" ? NewMessage : object;
/** What an answer item is in format `F`: a stored `Message` for `stowage`, else the provider's own JSON object. */
export type MessageOut<F extends Format> = F extends "stowage" ? Message : JsonObject;

/** One page of messages in format `F` (ascending seq order). */
export interface Page<F extends Format = "stowage"> {
  messages: MessageOut<F>[];
  /** Continues in the request's direction (older for latest/before, newer for after); `null` at the end. */
  next_cursor: string | null;
  repairs?: RepairReport;
  /** Seqs returned without an integrity tag. */
  unverified?: number[];
  /** What `mode=pure` left out. */
  dropped?: Dropped[];
}

/** A whole history (or a popped message) in format `F`. */
export interface Messages<F extends Format = "stowage"> {
  messages: MessageOut<F>[];
  dropped?: Dropped[];
}
