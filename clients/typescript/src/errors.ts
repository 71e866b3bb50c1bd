import type { ErrorCode } from "./types.js";

/**
 * A non-2xx answer of the server: its stable machine `code` (see `ErrorCode`),
 * the HTTP `status`, and the human `message`. `details` carries machine-readable
 * extras (`expected`/`actual` of a `conflict`, `from`/`to` of an
 * `invalid_transition`). An answer that is not the server's JSON envelope (a
 * proxy's HTML page, say) gets the code `http_error` and its text as message.
 *
 * Network failures, aborts and timeouts are not `StowageError`s: they reject with
 * what `fetch` rejects with (`AbortError`, or `TimeoutError` from
 * `AbortSignal.timeout`, or a `TypeError` from the network layer).
 */
export class StowageError extends Error {
  override readonly name = "StowageError";
  /** The server's code, or `http_error` when the body was not the server's JSON. */
  readonly code: ErrorCode | "http_error";
  /** The HTTP status (404, 401, 400, 409, …). */
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  /** Seconds, from the `Retry-After` header (429, 503). */
  readonly retryAfter: number | undefined;
  readonly method: string;
  readonly url: string;

  constructor(init: {
    code: ErrorCode | "http_error";
    status: number;
    message: string;
    details?: Record<string, unknown> | undefined;
    retryAfter?: number | undefined;
    method: string;
    url: string;
  }) {
    super(`${init.code} (${init.status}): ${init.message}`);
    this.code = init.code;
    this.status = init.status;
    this.details = init.details;
    this.retryAfter = init.retryAfter;
    this.method = init.method;
    this.url = init.url;
  }

  /** The server's message alone (`message` is prefixed with code and status). */
  get serverMessage(): string {
    const prefix = `${this.code} (${this.status}): `;
    return this.message.startsWith(prefix) ? this.message.slice(prefix.length) : this.message;
  }
}

/** Whether `error` is a `StowageError`, optionally with one of `codes`. */
export function isStowageError(error: unknown, ...codes: (ErrorCode | "http_error")[]): error is StowageError {
  return error instanceof StowageError && (codes.length === 0 || codes.includes(error.code));
}

function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

/** Builds the error of a non-2xx response (reads its body). */
export async function errorFromResponse(response: Response, method: string, url: string): Promise<StowageError> {
  const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
  let text = "";
  try {
    text = await response.text();
  } catch {
    // The body could not be read; the status still says what happened.
  }
  try {
    const body = JSON.parse(text) as unknown;
    if (body !== null && typeof body === "object" && "error" in body) {
      const error = (body as { error: unknown }).error;
      if (error !== null && typeof error === "object") {
        const { code, message, details } = error as { code?: unknown; message?: unknown; details?: unknown };
        if (typeof code === "string" && typeof message === "string") {
          return new StowageError({
            code: code as ErrorCode,
            status: response.status,
            message,
            details: details !== null && typeof details === "object" ? (details as Record<string, unknown>) : undefined,
            retryAfter,
            method,
            url,
          });
        }
      }
    }
  } catch {
    // Not JSON: fall through.
  }
  return new StowageError({
    code: "http_error",
    status: response.status,
    message: text.trim().slice(0, 500) || response.statusText || "HTTP error",
    retryAfter,
    method,
    url,
  });
}
