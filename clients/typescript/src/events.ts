import type { StowageClient } from "./client.js";
import { StowageError, errorFromResponse } from "./errors.js";
import { SseParser, parseSseStream } from "./sse.js";
import type { DisplayEvent, EventsLost } from "./types.js";

/** A display change: `data` is the `DisplayEvent` (`record` is the saved or updated display record). */
export interface DisplayChange {
  type: "display_message_saved" | "display_message_updated";
  /** The SSE id (`EPOCH-N`): where a later stream resumes. */
  id: string;
  data: DisplayEvent;
}

/**
 * Events after the resume point may be missing (server restart, replay buffer
 * overrun): reload the display list (`listDisplay`) and apply the events that
 * follow. `id` is where the stream continues.
 */
export interface LostEvents {
  type: "events_lost";
  id: string;
  data: EventsLost;
}

export type StowageEvent = DisplayChange | LostEvents;

export interface ReconnectOptions {
  /** First delay in ms (default 500, or the server's `retry:`), doubled per failed attempt. */
  initialDelayMs?: number;
  /** Longest delay in ms (default 30000). */
  maxDelayMs?: number;
  /** Attempts in a row before giving up with the last error (default: unlimited). */
  maxAttempts?: number;
}

export interface EventsOptions {
  /** Only this conversation's events (`GET /v1/conversations/{id}/events`); absent: the whole scope's. */
  conversation?: string | undefined;
  /** Resume after this event id (`Last-Event-ID`); absent: only events from the connection on. */
  lastEventId?: string | undefined;
  /** Send the resume id as `?last_event_id=` instead of the header. */
  lastEventIdInQuery?: boolean | undefined;
  /** Ends the iteration (quietly) and closes the connection. */
  signal?: AbortSignal | undefined;
  /** `Stowage-User` of the stream (overrides the client's). */
  user?: string | undefined;
  /** Reconnect when the stream ends or fails (default true); `false`: the iteration ends with the stream. */
  reconnect?: boolean | ReconnectOptions | undefined;
  /** Called on every successful (re)connection, with the id the stream resumed after. */
  onOpen?: ((info: { lastEventId: string | undefined; reconnect: boolean }) => void) | undefined;
}

const EVENT_NAMES = new Set(["display_message_saved", "display_message_updated", "events_lost"]);

function isRetryable(error: unknown): boolean {
  if (error instanceof StowageError) return error.status === 429 || error.status >= 500;
  return true; // network failures
}

/**
 * One event subscription. Iterate it once (`for await`). `lastEventId` is the id
 * of the last event received (resume a later stream from it); `opened` resolves
 * at the first successful connection, so a caller can make changes knowing the
 * stream will see them; `close()` ends it.
 */
export class EventStream implements AsyncIterable<StowageEvent> {
  /** The id of the last event received (or the one given to resume after). */
  lastEventId: string | undefined;
  /** Resolves when the stream is first connected; rejects if the first connection fails for good. */
  readonly opened: Promise<void>;
  private resolveOpened!: () => void;
  private rejectOpened!: (error: unknown) => void;
  private readonly controller = new AbortController();
  private readonly signal: AbortSignal;
  private started = false;

  constructor(
    private readonly client: StowageClient,
    private readonly options: EventsOptions,
  ) {
    this.lastEventId = options.lastEventId;
    this.signal = options.signal ? AbortSignal.any([options.signal, this.controller.signal]) : this.controller.signal;
    this.opened = new Promise<void>((resolve, reject) => {
      this.resolveOpened = resolve;
      this.rejectOpened = reject;
    });
    this.opened.catch(() => undefined); // observed through iteration too
  }

  /** Ends the stream: a pending `next()` resolves as done. */
  close(): void {
    this.controller.abort();
  }

  [Symbol.asyncIterator](): AsyncIterator<StowageEvent> {
    if (this.started) throw new Error("an EventStream can be iterated once; open another with client.events()");
    this.started = true;
    return this.run();
  }

  private async connect(): Promise<Response> {
    const path =
      this.options.conversation === undefined
        ? "/v1/events"
        : `/v1/conversations/${encodeURIComponent(this.options.conversation)}/events`;
    const resume = this.lastEventId;
    const useQuery = this.options.lastEventIdInQuery === true;
    const url = this.client.url(path, { last_event_id: useQuery ? resume : undefined });
    const headers = this.client.requestHeaders(
      { user: this.options.user },
      { accept: "text/event-stream", "cache-control": "no-cache", "last-event-id": useQuery ? undefined : resume },
    );
    const response = await this.client.fetcher(url, { method: "GET", headers, signal: this.signal });
    if (!response.ok) throw await errorFromResponse(response, "GET", url);
    if (!response.body) throw new TypeError("the event stream has no body");
    return response;
  }

  private async *run(): AsyncGenerator<StowageEvent, void, undefined> {
    const reconnect = this.options.reconnect ?? true;
    const settings: ReconnectOptions = typeof reconnect === "object" ? reconnect : {};
    const maxAttempts = settings.maxAttempts ?? Number.POSITIVE_INFINITY;
    const maxDelay = settings.maxDelayMs ?? 30_000;
    let serverRetry: number | undefined;
    let failures = 0;
    let connections = 0;
    try {
      while (!this.signal.aborted) {
        let response: Response;
        try {
          response = await this.connect();
        } catch (error) {
          if (this.signal.aborted) return;
          failures++;
          if (reconnect === false || !isRetryable(error) || failures >= maxAttempts) {
            this.rejectOpened(error);
            throw error;
          }
          await this.wait(failures, settings.initialDelayMs ?? serverRetry, maxDelay);
          continue;
        }
        failures = 0;
        this.options.onOpen?.({ lastEventId: this.lastEventId, reconnect: connections > 0 });
        connections++;
        this.resolveOpened();
        const parser = new SseParser(this.lastEventId ?? "");
        try {
          // Non-null: connect() checked the body.
          for await (const message of parseSseStream(response.body as ReadableStream<Uint8Array>, parser)) {
            serverRetry = parser.retry ?? serverRetry;
            if (!EVENT_NAMES.has(message.event)) continue; // unknown events: forward compatible
            if (message.id !== "") this.lastEventId = message.id;
            let data: unknown;
            try {
              data = JSON.parse(message.data);
            } catch {
              continue; // not the server's JSON: skip rather than kill the stream
            }
            yield { type: message.event, id: message.id, data } as StowageEvent;
          }
        } catch (error) {
          if (this.signal.aborted) return;
          if (reconnect === false) throw error;
        }
        // The stream ended (server shutdown) or dropped: resume after the last id.
        if (reconnect === false || this.signal.aborted) return;
        await this.wait(1, settings.initialDelayMs ?? serverRetry, maxDelay);
      }
    } finally {
      this.rejectOpened(new Error("the event stream ended before it connected"));
      this.controller.abort();
    }
  }

  private async wait(attempt: number, initial: number | undefined, maxDelay: number): Promise<void> {
    const delay = Math.min((initial ?? 500) * 2 ** Math.max(0, attempt - 1), maxDelay);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, delay);
      const signal = this.signal;
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      }
      signal.addEventListener("abort", done, { once: true });
    });
  }
}
