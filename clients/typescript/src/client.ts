import { StowageError, errorFromResponse } from "./errors.js";
import { EventStream, type EventsOptions } from "./events.js";
import type {
  AppendOutcome,
  ConversationInfo,
  ConversationMeta,
  ConversationMetaPatch,
  ConversationPage,
  DisplayPage,
  DisplayRecord,
  Dropped,
  Format,
  Health,
  MessageIn,
  MessageOut,
  Messages,
  Mode,
  OrphanPolicy,
  Page,
  Records,
  Replaced,
  RestoreRecord,
  SyntheticRequest,
  ToolStatus,
  ToolStatusRequest,
  ToolUpdate,
  TruncateOutcome,
} from "./types.js";

/** How the client retries. */
export interface RetryOptions {
  /** Further attempts after the first (default 2; 0 disables retries). */
  retries?: number;
  /** First back-off delay in ms, doubled per attempt (default 200). A `Retry-After` header wins. */
  minDelayMs?: number;
  /** Longest back-off delay in ms (default 5000). */
  maxDelayMs?: number;
}

export interface StowageClientOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:7373` (a path prefix is kept). */
  baseUrl: string | URL;
  /** The bearer token (bound to one tenant on the server). */
  token?: string | undefined;
  /** The default `Stowage-User` (the user within the token's tenant); absent: the empty user. */
  user?: string | undefined;
  /**
   * Default deadline of each call in ms, retries included (default 30000; 0: none).
   * Event streams have no deadline.
   */
  timeoutMs?: number;
  /** Retries of calls that are safe to repeat (see the README). */
  retry?: RetryOptions;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call (rejects with the signal's reason). */
  signal?: AbortSignal | undefined;
  /** Deadline of this call in ms (overrides the client's; 0: none). Rejects with a `TimeoutError`. */
  timeoutMs?: number | undefined;
  /** `Stowage-User` of this call (overrides the client's). */
  user?: string | undefined;
  /** Extra headers of this call. */
  headers?: Record<string, string> | undefined;
}

export interface ListConversationsOptions extends CallOptions {
  /** Page size (server default 100). */
  limit?: number | undefined;
  /** `next_cursor` of the previous page. */
  cursor?: string | undefined;
}

export interface FormatOptions<F extends Format> {
  /** Transcript format of the messages (default `stowage`). */
  format?: F | undefined;
}

export interface ReadOptions<F extends Format> extends FormatOptions<F> {
  /** `keep` (default; lossless, `x_stowage` where a format has no slot) or `pure` (provider formats only). */
  mode?: Mode | undefined;
}

export interface AppendOptions<F extends Format> extends CallOptions, FormatOptions<F> {
  /** 409 `conflict` unless the conversation is at this version. Excludes `createIfMissing`. */
  expectedVersion?: number | undefined;
  /** Create the conversation (with `meta`) when it does not exist. */
  createIfMissing?: boolean | undefined;
  /** The conversation's meta when `createIfMissing` creates it. */
  meta?: ConversationMeta | undefined;
  /**
   * `Idempotency-Key`: messages without an id get ids derived from it, so a retry
   * stores nothing twice. When absent and retries are on, the client makes one
   * (a random UUID) for batches that have messages without ids.
   */
  idempotencyKey?: string | undefined;
}

export interface ReplaceOptions<F extends Format> extends CallOptions, FormatOptions<F> {
  /** 409 `conflict` unless the conversation is at this version. */
  expectedVersion?: number | undefined;
  /** `Idempotency-Key`: deterministic ids for messages without one. */
  idempotencyKey?: string | undefined;
}

export interface LoadOptions<F extends Format> extends CallOptions, ReadOptions<F> {
  /** Page size (server default 50). */
  limit?: number | undefined;
  /** Messages with seq > after, oldest first. */
  after?: number | undefined;
  /** Messages with seq < before. */
  before?: number | undefined;
  /** `next_cursor` of the previous page. At most one of after, before, cursor. */
  cursor?: string | undefined;
  /** Tool calls without a result: `keep` (default), `strip`, `synthesize` (a view; storage is unchanged). */
  orphans?: OrphanPolicy | undefined;
}

export interface TruncateOptions extends CallOptions {
  expectedVersion?: number | undefined;
}

export interface PopResult<F extends Format> {
  /** The removed (newest) message, `null` when the conversation was empty. */
  message: MessageOut<F> | null;
  dropped?: Dropped[];
}

export interface ListDisplayOptions extends CallOptions {
  /** Records with seq > after (default 0). */
  after?: number | undefined;
  /** Page size (server default 100). */
  limit?: number | undefined;
}

export interface SaveDisplayMessageOptions<F extends Format> extends CallOptions, FormatOptions<F> {
  agentId?: string | undefined;
}

export interface ToolStatusOptions extends CallOptions, Omit<ToolStatusRequest, "status"> {}

export interface ResolveToolResultOptions extends CallOptions {
  agentId?: string | undefined;
}

type Method = "GET" | "PUT" | "POST" | "PATCH" | "DELETE";

interface RequestSpec {
  method: Method;
  path: string;
  query?: Record<string, string | number | boolean | undefined> | undefined;
  body?: unknown;
  headers?: Record<string, string | undefined> | undefined;
  /** Whether repeating the request cannot do anything twice. */
  idempotent: boolean;
  /** Whether to skip the `Authorization` header (public routes). */
  public?: boolean;
  options?: CallOptions | undefined;
  /** Whether to accept this error status as an answer (health's 503). */
  acceptStatus?: number[];
}

/** Percent-encodes one path segment (conversation ids may hold `/`, `?`, `#`, `%`, anything). */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

/**
 * Header values must be ByteStrings for `fetch`; the server reads `Stowage-User`
 * as UTF-8. Sends the UTF-8 bytes, one Latin-1 character each.
 */
export function utf8HeaderValue(value: string): string {
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(value)) return value;
  let out = "";
  for (const byte of new TextEncoder().encode(value)) out += String.fromCharCode(byte);
  return out;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Merges a caller's signal and a deadline into one signal. */
export function combineSignals(signal: AbortSignal | undefined, timeoutMs: number | undefined): AbortSignal | undefined {
  const timeout = timeoutMs !== undefined && timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined;
  if (signal && timeout) return AbortSignal.any([signal, timeout]);
  return signal ?? timeout;
}

/**
 * The Stowage HTTP client. Every method maps to one route of `stowage serve`
 * (see `server/openapi.json`); answers are the generated OpenAPI types.
 */
export class StowageClient {
  readonly baseUrl: string;
  readonly user: string | undefined;
  private readonly token: string | undefined;
  private readonly timeoutMs: number;
  private readonly retry: Required<RetryOptions>;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: typeof fetch;

  constructor(options: StowageClientOptions) {
    if (!options || options.baseUrl === undefined || options.baseUrl === "") {
      throw new TypeError("StowageClient: baseUrl is required (e.g. http://127.0.0.1:7373)");
    }
    const base = new URL(String(options.baseUrl));
    this.baseUrl = base.href.replace(/\/+$/, "");
    this.token = options.token;
    this.user = options.user;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.retry = {
      retries: options.retry?.retries ?? 2,
      minDelayMs: options.retry?.minDelayMs ?? 200,
      maxDelayMs: options.retry?.maxDelayMs ?? 5_000,
    };
    this.headers = { ...options.headers };
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** A client like this one with another default `Stowage-User` (same token and settings). */
  withUser(user: string | undefined): StowageClient {
    return new StowageClient({
      baseUrl: this.baseUrl,
      token: this.token,
      user,
      timeoutMs: this.timeoutMs,
      retry: this.retry,
      headers: this.headers,
      fetch: this.fetchImpl,
    });
  }

  // ---------------------------------------------------------------- plumbing

  /** The URL of `path` (already percent-encoded) with `query`. */
  url(path: string, query?: Record<string, string | number | boolean | undefined>): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) params.set(key, String(value));
    }
    const search = params.toString();
    return `${this.baseUrl}${path}${search ? `?${search}` : ""}`;
  }

  /** The headers of a request (auth, user, extras). */
  requestHeaders(options: CallOptions | undefined, extra?: Record<string, string | undefined>, isPublic = false): Headers {
    const headers = new Headers(this.headers);
    if (!isPublic && this.token !== undefined) headers.set("authorization", `Bearer ${this.token}`);
    const user = options?.user ?? this.user;
    if (!isPublic && user !== undefined) headers.set("stowage-user", utf8HeaderValue(user));
    for (const [key, value] of Object.entries(extra ?? {})) {
      if (value !== undefined) headers.set(key, value);
    }
    for (const [key, value] of Object.entries(options?.headers ?? {})) headers.set(key, value);
    return headers;
  }

  /** The fetch in use (for event streams). */
  get fetcher(): typeof fetch {
    return this.fetchImpl;
  }

  private delay(attempt: number, error: StowageError | undefined): number {
    if (error?.retryAfter !== undefined) return Math.min(error.retryAfter * 1000, this.retry.maxDelayMs);
    return Math.min(this.retry.minDelayMs * 2 ** attempt, this.retry.maxDelayMs);
  }

  private async request<T>(spec: RequestSpec): Promise<T> {
    const url = this.url(spec.path, spec.query);
    const signal = combineSignals(spec.options?.signal, spec.options?.timeoutMs ?? this.timeoutMs);
    const headers = this.requestHeaders(spec.options, spec.headers, spec.public);
    let body: string | null = null;
    if (spec.body !== undefined) {
      body = JSON.stringify(spec.body);
      headers.set("content-type", "application/json");
    }
    headers.set("accept", "application/json");
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.fetchImpl(url, { method: spec.method, headers, body, signal: signal ?? null });
      } catch (error) {
        // Aborts and timeouts are final; a network failure of a safe request is retried.
        if (signal?.aborted) throw signal.reason;
        if (spec.idempotent && attempt < this.retry.retries) {
          await sleep(this.delay(attempt, undefined), signal);
          continue;
        }
        throw error;
      }
      if (response.ok || spec.acceptStatus?.includes(response.status)) {
        return (await response.json()) as T;
      }
      const error = await errorFromResponse(response, spec.method, url);
      // 429 is refused before the handler runs: always safe to repeat. 503 and 504
      // may come after the store acted: only for requests that are safe to repeat.
      const retryable =
        error.status === 429 || (spec.idempotent && (error.status === 503 || error.status === 504 || error.status === 502));
      if (retryable && attempt < this.retry.retries) {
        await sleep(this.delay(attempt, error), signal);
        continue;
      }
      throw error;
    }
  }

  private conversationPath(conversation: string, rest = ""): string {
    return `/v1/conversations/${segment(conversation)}${rest}`;
  }

  // ---------------------------------------------------------------- public routes

  /** `GET /healthz`: the server's and the store's health (also when 503). No token needed. */
  health(options?: CallOptions): Promise<Health> {
    return this.request({ method: "GET", path: "/healthz", idempotent: true, public: true, options, acceptStatus: [503] });
  }

  /** `GET /v1/openapi.json`: the OpenAPI document the server serves. */
  openapi(options?: CallOptions): Promise<Record<string, unknown>> {
    return this.request({ method: "GET", path: "/v1/openapi.json", idempotent: true, public: true, options });
  }

  // ---------------------------------------------------------------- conversations

  /** `GET /v1/conversations`: one page of the scope's conversations, ordered by id. */
  listConversations(options?: ListConversationsOptions): Promise<ConversationPage> {
    return this.request({
      method: "GET",
      path: "/v1/conversations",
      query: { limit: options?.limit, cursor: options?.cursor },
      idempotent: true,
      options,
    });
  }

  /** Every conversation of the scope, page by page (`limit` is the page size). */
  async *conversations(options?: Omit<ListConversationsOptions, "cursor">): AsyncGenerator<ConversationInfo, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.listConversations({ ...options, cursor });
      yield* page.conversations;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }

  /**
   * `PUT /v1/conversations/{id}`: finds or creates a conversation. Idempotent: an
   * existing conversation is returned unchanged (its meta is not updated: see
   * `updateConversation`).
   */
  openConversation(conversation: string, meta?: ConversationMeta, options?: CallOptions): Promise<ConversationInfo> {
    return this.request({
      method: "PUT",
      path: this.conversationPath(conversation),
      body: meta ?? {},
      idempotent: true,
      options,
    });
  }

  /** `GET /v1/conversations/{id}`: the conversation without its messages; `StowageError` 404 when missing. */
  getConversation(conversation: string, options?: CallOptions): Promise<ConversationInfo> {
    return this.request({ method: "GET", path: this.conversationPath(conversation), idempotent: true, options });
  }

  /**
   * `PATCH /v1/conversations/{id}`: changes some of the conversation's meta. A member
   * given replaces that field (`metadata` and `extra` whole), `null` clears it, a
   * member left out keeps its stored value; history, version and `updated_at` stay.
   * Resolves with the conversation's new info; `StowageError` 404 when missing.
   */
  updateConversation(
    conversation: string,
    patch: ConversationMetaPatch,
    options?: CallOptions,
  ): Promise<ConversationInfo> {
    return this.request({
      method: "PATCH",
      path: this.conversationPath(conversation),
      body: patch,
      idempotent: true,
      options,
    });
  }

  /** Like `getConversation`, but `null` instead of a 404. */
  async findConversation(conversation: string, options?: CallOptions): Promise<ConversationInfo | null> {
    try {
      return await this.getConversation(conversation, options);
    } catch (error) {
      if (error instanceof StowageError && error.code === "not_found") return null;
      throw error;
    }
  }

  /** `DELETE /v1/conversations/{id}` with its messages and display records; `false` when nothing existed. */
  async deleteConversation(conversation: string, options?: CallOptions): Promise<boolean> {
    const answer = await this.request<{ deleted: boolean }>({
      method: "DELETE",
      path: this.conversationPath(conversation),
      idempotent: true,
      options,
    });
    return answer.deleted;
  }

  // ---------------------------------------------------------------- messages

  /**
   * `POST …/messages`: appends a batch atomically (contiguous seqs). Idempotent by
   * message id; `idempotencyKey` covers messages without ids.
   */
  append<F extends Format = "stowage">(
    conversation: string,
    messages: readonly MessageIn<F>[],
    options?: AppendOptions<F>,
  ): Promise<AppendOutcome> {
    let key = options?.idempotencyKey;
    const everyHasId = messages.every(
      (m) => typeof (m as { id?: unknown }).id === "string" && (m as { id: string }).id !== "",
    );
    if (key === undefined && !everyHasId && this.retry.retries > 0) key = globalThis.crypto.randomUUID();
    return this.request({
      method: "POST",
      path: this.conversationPath(conversation, "/messages"),
      query: { format: options?.format },
      headers: { "idempotency-key": key },
      body: {
        messages,
        expected_version: options?.expectedVersion,
        create_if_missing: options?.createIfMissing || undefined,
        meta: options?.meta,
      },
      // With an id on every message or a key, a repeat stores nothing twice.
      idempotent: everyHasId || key !== undefined,
      options,
    });
  }

  /** `PUT …/messages`: replaces the whole history (renumbered from 1); 404 when the conversation does not exist. */
  replace<F extends Format = "stowage">(
    conversation: string,
    messages: readonly MessageIn<F>[],
    options?: ReplaceOptions<F>,
  ): Promise<Replaced> {
    return this.request({
      method: "PUT",
      path: this.conversationPath(conversation, "/messages"),
      query: { format: options?.format },
      headers: { "idempotency-key": options?.idempotencyKey },
      body: { messages, expected_version: options?.expectedVersion },
      idempotent: true,
      options,
    });
  }

  /**
   * `GET …/messages`: one page. Without `after`/`before`/`cursor` the newest
   * `limit` messages; `next_cursor` continues in the request's direction (older
   * for latest/before, newer for after). Messages are in ascending seq order.
   */
  load<F extends Format = "stowage">(conversation: string, options?: LoadOptions<F>): Promise<Page<F>> {
    return this.request({
      method: "GET",
      path: this.conversationPath(conversation, "/messages"),
      query: {
        limit: options?.limit,
        after: options?.after,
        before: options?.before,
        cursor: options?.cursor,
        orphans: options?.orphans,
        format: options?.format,
        mode: options?.mode,
      },
      idempotent: true,
      options,
    });
  }

  /** Pages following `next_cursor` from the page `options` selects, until the end. */
  async *pages<F extends Format = "stowage">(
    conversation: string,
    options?: LoadOptions<F>,
  ): AsyncGenerator<Page<F>, void, undefined> {
    let page = await this.load<F>(conversation, options);
    yield page;
    while (page.next_cursor !== null) {
      const { after: _after, before: _before, ...rest } = options ?? {};
      page = await this.load<F>(conversation, { ...rest, cursor: page.next_cursor });
      yield page;
    }
  }

  /** `GET …/messages/all`: the whole history, oldest first. */
  loadAll<F extends Format = "stowage">(
    conversation: string,
    options?: CallOptions & ReadOptions<F>,
  ): Promise<Messages<F>> {
    return this.request({
      method: "GET",
      path: this.conversationPath(conversation, "/messages/all"),
      query: { format: options?.format, mode: options?.mode },
      idempotent: true,
      options,
    });
  }

  /** `DELETE …/messages?after=SEQ`: removes every message after `after` (`0` empties the history). */
  truncate(conversation: string, after: number, options?: TruncateOptions): Promise<TruncateOutcome> {
    return this.request({
      method: "DELETE",
      path: this.conversationPath(conversation, "/messages"),
      query: { after, expected_version: options?.expectedVersion },
      idempotent: true,
      options,
    });
  }

  /** `POST …/messages/pop`: removes and returns the newest message. Never retried (a retry pops another one). */
  async pop<F extends Format = "stowage">(
    conversation: string,
    options?: CallOptions & ReadOptions<F>,
  ): Promise<PopResult<F>> {
    const answer = await this.request<Messages<F>>({
      method: "POST",
      path: this.conversationPath(conversation, "/messages/pop"),
      query: { format: options?.format, mode: options?.mode },
      idempotent: false,
      options,
    });
    const result: PopResult<F> = { message: answer.messages[answer.messages.length - 1] ?? null };
    if (answer.dropped !== undefined) result.dropped = answer.dropped;
    return result;
  }

  // ---------------------------------------------------------------- display persistence

  /** `GET …/display`: a page of display records, ascending by seq; `next_after` continues. */
  listDisplay(conversation: string, options?: ListDisplayOptions): Promise<DisplayPage> {
    return this.request({
      method: "GET",
      path: this.conversationPath(conversation, "/display"),
      query: { after: options?.after, limit: options?.limit },
      idempotent: true,
      options,
    });
  }

  /** Every display record after `after`, page by page. */
  async *displayRecords(
    conversation: string,
    options?: ListDisplayOptions,
  ): AsyncGenerator<DisplayRecord, void, undefined> {
    let after = options?.after;
    for (;;) {
      const page = await this.listDisplay(conversation, { ...options, after });
      yield* page.records;
      if (page.next_after === null || page.records.length === 0) return;
      after = page.next_after;
    }
  }

  /**
   * `POST …/display/messages`: saves one message as display records (one per
   * part; tool calls become `pending` cards). Not retried: a repeat saves again.
   */
  async saveDisplayMessage<F extends Format = "stowage">(
    conversation: string,
    message: MessageIn<F>,
    options?: SaveDisplayMessageOptions<F>,
  ): Promise<DisplayRecord[]> {
    const answer = await this.request<Records>({
      method: "POST",
      path: this.conversationPath(conversation, "/display/messages"),
      query: { format: options?.format },
      body: { message, agent_id: options?.agentId },
      idempotent: false,
      options,
    });
    return answer.records;
  }

  /** `POST …/display/synthetic`: saves one record the integrator originates. */
  saveSynthetic(conversation: string, message: SyntheticRequest, options?: CallOptions): Promise<DisplayRecord> {
    return this.request({
      method: "POST",
      path: this.conversationPath(conversation, "/display/synthetic"),
      body: message,
      idempotent: false,
      options,
    });
  }

  /**
   * `POST …/display/restore`: stores exported records verbatim (import,
   * migration). Exported `DisplayRecord`s may be passed as they are: their
   * scope, conversation and seq are replaced by this conversation's.
   */
  async restoreDisplay(
    conversation: string,
    records: readonly (RestoreRecord | DisplayRecord)[],
    options?: CallOptions,
  ): Promise<DisplayRecord[]> {
    const body = {
      records: records.map((record) => {
        const { scope: _scope, conversation_id: _conversation, seq: _seq, ...rest } = record as DisplayRecord;
        return rest;
      }),
    };
    const answer = await this.request<Records>({
      method: "POST",
      path: this.conversationPath(conversation, "/display/restore"),
      body,
      idempotent: false,
      options,
    });
    return answer.records;
  }

  /**
   * `POST …/display/tools/{call_id}/status`: moves a tool card. Repeating the
   * current status answers `changed: false`; an unknown call is 404; a refused
   * transition is 409 `invalid_transition` (`details.from`/`to`).
   */
  updateToolStatus(
    conversation: string,
    callId: string,
    status: ToolStatus,
    options?: ToolStatusOptions,
  ): Promise<ToolUpdate> {
    const { signal, timeoutMs, user, headers, ...info } = options ?? {};
    return this.request({
      method: "POST",
      path: this.conversationPath(conversation, `/display/tools/${segment(callId)}/status`),
      body: { status, ...info },
      idempotent: true,
      options: { signal, timeoutMs, user, headers },
    });
  }

  /** `POST …/display/tools/{call_id}/result`: resolves an interrupted card with the tool's real result. */
  resolveToolResult(
    conversation: string,
    callId: string,
    content: string,
    options?: ResolveToolResultOptions,
  ): Promise<ToolUpdate> {
    return this.request({
      method: "POST",
      path: this.conversationPath(conversation, `/display/tools/${segment(callId)}/result`),
      body: { content, agent_id: options?.agentId },
      idempotent: false,
      options,
    });
  }

  // ---------------------------------------------------------------- events

  /**
   * Display events over SSE, as an async iterable: the whole scope's, or one
   * conversation's with `conversation`. Resumes after `lastEventId`, reconnects
   * (with `Last-Event-ID`) when the stream drops unless `reconnect: false`, and
   * ends when `signal` aborts or the loop breaks.
   */
  events(options?: EventsOptions): EventStream {
    return new EventStream(this, options ?? {});
  }
}
