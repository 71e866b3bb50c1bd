/**
 * Vercel AI SDK (v5) helpers: persist a chat's `UIMessage[]` and load it back,
 * through the server's `ai-sdk-ui` transcript format (docs/formats.md §6: ids,
 * metadata, text, reasoning, tool parts in every state, files and steps map
 * losslessly; everything else travels verbatim).
 *
 * This module does not depend on `ai`, not even for types, so the package's
 * root entry works without it: messages are typed structurally (`ChatMessage`).
 * `@stowage/client/ai` exports the same functions typed with the SDK's own
 * `UIMessage` (an optional peer dependency).
 *
 * ```ts
 * // app/api/chat/route.ts
 * return result.toUIMessageStreamResponse({
 *   originalMessages: messages,
 *   onFinish: ({ messages }) => saveChat(stowage, chatId, messages),
 * });
 * ```
 */
import type { CallOptions, StowageClient } from "./client.js";
import { isStowageError } from "./errors.js";
import type { ConversationMeta, Mode } from "./types.js";

/**
 * What `saveChat` stores and `loadChat` returns, structurally: the AI SDK's
 * `UIMessage` (any of its type parameters) satisfies it.
 */
export interface ChatMessage {
  id: string;
  role: "system" | "user" | "assistant";
  metadata?: unknown;
  parts: readonly { type: string }[];
}

export interface LoadChatOptions extends CallOptions {
  /**
   * `pure` (default) returns exactly what `validateUIMessages` accepts; `keep`
   * adds the server's `x_stowage` members (seqs' ids, timestamps, usage) where
   * a UIMessage has no slot for them.
   */
  mode?: Mode | undefined;
  /** What a missing conversation gives: `[]` (default; a new chat) or a `StowageError` 404. */
  ifMissing?: "empty" | "throw" | undefined;
}

export interface SaveChatOptions extends CallOptions {
  /** The conversation's meta when this call creates it (title, agent id, metadata). */
  meta?: ConversationMeta | undefined;
  /** 409 `conflict` unless the stored history is at this version (optimistic concurrency; 0 for a new chat). */
  expectedVersion?: number | undefined;
}

/**
 * The chat's messages, as the AI SDK's `useChat({ messages })` /
 * `convertToModelMessages` take them.
 */
export async function loadChat<M extends ChatMessage = ChatMessage>(
  client: StowageClient,
  chatId: string,
  options?: LoadChatOptions,
): Promise<M[]> {
  const { mode = "pure", ifMissing = "empty", ...call } = options ?? {};
  try {
    const { messages } = await client.loadAll(chatId, { ...call, format: "ai-sdk-ui", mode });
    return messages as unknown as M[];
  } catch (error) {
    if (ifMissing === "empty" && isStowageError(error, "not_found")) return [];
    throw error;
  }
}

/**
 * Stores `messages` as the chat's whole history (the conversation is created
 * on first save). Call it from `onFinish` with the full list: it replaces what
 * was stored, so edited, regenerated or updated messages (a tool part that got
 * its output) are stored as they are now. Resolves with the new version.
 */
export async function saveChat<M extends ChatMessage = ChatMessage>(
  client: StowageClient,
  chatId: string,
  messages: readonly M[],
  options?: SaveChatOptions,
): Promise<{ version: number }> {
  const { meta, expectedVersion, ...call } = options ?? {};
  const replace = () => client.replace(chatId, messages, { ...call, format: "ai-sdk-ui", expectedVersion });
  try {
    return await replace();
  } catch (error) {
    // A new chat: create it, then store. `expectedVersion: 0` also means "new".
    if (!isStowageError(error, "not_found") || (expectedVersion ?? 0) !== 0) throw error;
  }
  await client.openConversation(chatId, meta, call);
  return replace();
}
