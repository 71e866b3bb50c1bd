// The host's SQL database (`stowage:store/sql`): values, queries, write
// transactions, and the schema. The same tables as the C example, SQLite only
// (`?N` placeholders; see README.md).
import sql from "stowage:store/sql@0.2.0";

/** An error the adapter answers with: `{tag, val}` of the contract's `error`. */
export class StoreError extends Error {
  constructor(tag, val) {
    super(val === undefined ? tag : `${tag}: ${JSON.stringify(val)}`);
    this.error = val === undefined ? { tag } : { tag, val };
  }
}

export const notFound = () => new StoreError("not-found");
export const storage = (reason) => new StoreError("storage", reason);
export const invalidInput = (reason) => new StoreError("invalid-input", reason);

// Parameter values (the `value` variant of the sql interface).
export const int = (n) => ({ tag: "integer", val: n });
export const text = (s) => ({ tag: "text", val: s });
export const blob = (bytes) => ({ tag: "blob", val: bytes });
export const NULL = { tag: "null" };
export const optText = (s) => (s === null || s === undefined ? NULL : text(s));

/** The key of a conversation: (tenant, user, conversation id) as ?1, ?2, ?3. */
export const key = (scope, conversationId) => [text(scope.tenant), text(scope.user), text(conversationId)];

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS example_conversations (
     tenant TEXT NOT NULL, scope_user TEXT NOT NULL, id TEXT NOT NULL,
     created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
     version INTEGER NOT NULL, last_seq INTEGER NOT NULL,
     meta_content BLOB NOT NULL, meta_tag BLOB NOT NULL,
     PRIMARY KEY (tenant, scope_user, id))`,
  `CREATE TABLE IF NOT EXISTS example_messages (
     tenant TEXT NOT NULL, scope_user TEXT NOT NULL, conversation_id TEXT NOT NULL,
     seq INTEGER NOT NULL, id TEXT NOT NULL, role INTEGER NOT NULL, created_at INTEGER NOT NULL,
     content BLOB NOT NULL, tag BLOB NOT NULL,
     PRIMARY KEY (tenant, scope_user, conversation_id, seq),
     UNIQUE (tenant, scope_user, conversation_id, id))`,
  `CREATE TABLE IF NOT EXISTS example_display (
     tenant TEXT NOT NULL, scope_user TEXT NOT NULL, conversation_id TEXT NOT NULL,
     seq INTEGER NOT NULL, message_id TEXT, message_type TEXT NOT NULL, content_type TEXT NOT NULL,
     tool_call_id TEXT, status TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
     body BLOB NOT NULL, tag BLOB NOT NULL,
     PRIMARY KEY (tenant, scope_user, conversation_id, seq))`,
  `CREATE INDEX IF NOT EXISTS example_display_status
     ON example_display (status, tenant, scope_user, conversation_id, seq) WHERE status IS NOT NULL`,
];

let ready = false;

/** Checks the dialect and creates the tables, once per instance. */
export function ensureReady() {
  if (ready) return;
  if (sql.getDialect() !== "sqlite") {
    throw new StoreError("unsupported", "the JS example adapter speaks SQLite only; this store's database is PostgreSQL");
  }
  for (const statement of SCHEMA) sql.execute(statement, []);
  ready = true;
}

/** Runs one statement; returns the number of rows it changed. */
export const execute = (statement, params) => sql.execute(statement, params);

/** Runs a query; returns its rows as arrays of plain JS values (null, number, string, Uint8Array). */
export function query(statement, params) {
  return sql.query(statement, params).rows.map((row) => row.values.map((v) => (v.tag === "null" ? null : v.val)));
}

/** Runs statements `[sql, params]` in one host call: all take effect or none does. */
export const batch = (statements) => sql.executeBatch(statements.map(([s, params]) => ({ sql: s, params })));

/**
 * Runs `body` in a write transaction: SQLite's `begin` takes the database's
 * write lock, so the checks and the write that follows them see the same
 * data. Commits when `body` returns, rolls back when anything throws.
 */
export function write(body) {
  sql.begin();
  try {
    const result = body();
    sql.commit();
    return result;
  } catch (e) {
    try {
      sql.rollback();
    } catch {
      // Best effort: the host rolls back a transaction left open anyway.
    }
    throw e;
  }
}

/** Checks that a batch's seqs are contiguous; `invalid-input` naming `what` otherwise. */
export function checkContiguous(what, seqs) {
  seqs.forEach((seq, i) => {
    if ((i > 0 && seq !== seqs[i - 1] + 1) || !Number.isSafeInteger(seq)) {
      throw invalidInput(`${what}: seqs must be contiguous, item ${i} has seq ${seq}`);
    }
  });
}
