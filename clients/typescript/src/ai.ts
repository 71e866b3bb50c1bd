/**
 * `@stowage/client/ai`: `loadChat` / `saveChat` typed with the Vercel AI SDK's
 * own `UIMessage` (peer dependency `ai` v5; only its types are used).
 *
 * ```ts
 * import { loadChat, saveChat } from '@stowage/client/ai';
 * const messages = await loadChat(stowage, chatId); // UIMessage[]
 * ```
 */
import type { UIMessage } from "ai";

import type { StowageClient } from "./client.js";
import { loadChat as load, saveChat as save, type LoadChatOptions, type SaveChatOptions } from "./chat.js";

export type { LoadChatOptions, SaveChatOptions } from "./chat.js";

/** The chat's messages, as `useChat({ messages })` and `convertToModelMessages` take them. See the root `loadChat`. */
export function loadChat<M extends UIMessage = UIMessage>(
  client: StowageClient,
  chatId: string,
  options?: LoadChatOptions,
): Promise<M[]> {
  return load<M>(client, chatId, options);
}

/** Stores `messages` as the chat's whole history (created on first save). See the root `saveChat`. */
export function saveChat<M extends UIMessage = UIMessage>(
  client: StowageClient,
  chatId: string,
  messages: readonly M[],
  options?: SaveChatOptions,
): Promise<{ version: number }> {
  return save<M>(client, chatId, messages, options);
}
