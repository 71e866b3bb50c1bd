// `display-store`: display records in SQL, one row each in `example_display`,
// stored verbatim at the seqs the host gives them. Records may exist for a
// conversation without history, so nothing here reads `example_conversations`.
import { NULL, batch, blob, checkContiguous, execute, int, key, notFound, optText, query, text, write } from "./db.js";

const RECORD = "seq, message_id, message_type, content_type, tool_call_id, status, created_at, updated_at, body, tag";
const RECORDS = "FROM example_display WHERE tenant = ?1 AND scope_user = ?2 AND conversation_id = ?3";

/** A stored record's parameters ?4..?13, after the key. */
const recordParams = ({ seq, record: r }) => [
  int(seq), optText(r.messageId), text(r.messageType), text(r.contentType), optText(r.toolCallId),
  optText(r.status), int(r.createdAt), int(r.updatedAt), blob(r.body), blob(r.tag),
];

/** A row of RECORD columns as a stored display record. */
const stored = ([seq, messageId, messageType, contentType, toolCallId, status, createdAt, updatedAt, body, tag]) => ({
  seq, record: { messageId, messageType, contentType, toolCallId, status, body, createdAt, updatedAt, tag },
});

export const displayStore = {
  insert(scope, conversationId, records) {
    checkContiguous("display insert", records.map((r) => r.seq));
    if (!records.length) return { tag: "stored" };
    const k = key(scope, conversationId);
    return write(() => {
      const [[last]] = query(`SELECT COALESCE(MAX(seq), 0) ${RECORDS}`, k);
      if (records[0].seq !== last + 1) return { tag: "out-of-sequence", val: last };
      batch(records.map((r) => [
        `INSERT INTO example_display (tenant, scope_user, conversation_id, ${RECORD})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`,
        [...k, ...recordParams(r)],
      ]));
      return { tag: "stored" };
    });
  },

  byToolCallId(scope, conversationId, toolCallId) {
    const rows = query(`SELECT ${RECORD} ${RECORDS} AND tool_call_id = ?4 ORDER BY seq`, [...key(scope, conversationId), text(toolCallId)]);
    return rows.map(stored);
  },

  update(scope, conversationId, record) {
    const changed = execute(
      `UPDATE example_display SET message_id = ?5, message_type = ?6, content_type = ?7, tool_call_id = ?8, status = ?9,
         created_at = ?10, updated_at = ?11, body = ?12, tag = ?13
       WHERE tenant = ?1 AND scope_user = ?2 AND conversation_id = ?3 AND seq = ?4`,
      [...key(scope, conversationId), ...recordParams(record)],
    );
    if (changed === 0) throw notFound();
  },

  list(scope, conversationId, after, limit) {
    const rows = query(`SELECT ${RECORD} ${RECORDS} AND seq > ?4 ORDER BY seq LIMIT ?5 + 0`, [...key(scope, conversationId), int(after), int(limit)]);
    return rows.map(stored);
  },

  findByStatus(statuses, after, limit) {
    if (!statuses.length || limit === 0) return [];
    // ?1 limit, ?2..?5 the position (unused without one), ?6... the statuses.
    const placeholders = statuses.map((_, i) => `?${6 + i}`).join(", ");
    const position = after ? " AND (tenant, scope_user, conversation_id, seq) > (?2, ?3, ?4, ?5)" : "";
    const params = [
      int(limit),
      ...(after ? [...key(after.scope, after.conversationId), int(after.seq)] : [NULL, NULL, NULL, NULL]),
      ...statuses.map(text),
    ];
    const rows = query(
      `SELECT tenant, scope_user, conversation_id, ${RECORD} FROM example_display WHERE status IN (${placeholders})${position}
       ORDER BY tenant, scope_user, conversation_id, seq LIMIT ?1 + 0`,
      params,
    );
    return rows.map(([tenant, user, conversationId, ...record]) => ({
      scope: { tenant, user }, conversationId, stored: stored(record),
    }));
  },
};
