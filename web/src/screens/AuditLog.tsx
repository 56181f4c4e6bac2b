import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { getList } from "../api/client";
import { AUDIT_ACTIONS, AUDIT_LABELS, type AuditRecord } from "../api/types";
import { Form } from "../components/Form";
import { Empty, ErrorNotice, Field, Loading, PageHeader, Pager } from "../components/ui";
import { formatDate, shorten } from "../lib/format";

/** The account's audit log (issue #21): who did what, when, from where; filter by action. */
export default function AuditLog() {
  const [page, setPage] = useState(1);
  const [action, setAction] = useState("");
  const log = useQuery({
    queryKey: ["audit-log", action, page],
    queryFn: () => getList<AuditRecord>("/api/v1/dashboard/audit-log", { page, limit: 50, action }),
    placeholderData: keepPreviousData,
  });
  return (
    <>
      <PageHeader title="Audit log" />
      <Form className="filters" aria-label="Filter the audit log">
        <Field label="Action">
          {(id) => (
            <select
              id={id}
              value={action}
              onChange={(e) => {
                setAction(e.target.value);
                setPage(1);
              }}
            >
              <option value="">All actions</option>
              {AUDIT_ACTIONS.map((a) => (
                <option key={a} value={a}>
                  {AUDIT_LABELS[a]} ({a})
                </option>
              ))}
            </select>
          )}
        </Field>
      </Form>
      {log.isPending ? <Loading /> : null}
      <ErrorNotice error={log.error} />
      {log.data && log.data.data.length === 0 ? <Empty title="No records" /> : null}
      {log.data && log.data.data.length > 0 ? (
        <>
          <div className="table-wrap">
            <table aria-label="Audit records">
              <thead>
                <tr>
                  <th>Time</th>
                  <th>Action</th>
                  <th>Who</th>
                  <th>Environment</th>
                  <th>Target</th>
                  <th>From</th>
                  <th>Details</th>
                </tr>
              </thead>
              <tbody>
                {log.data.data.map((r) => (
                  <tr key={r.id}>
                    <td>{formatDate(r.createdAt)}</td>
                    <td>
                      {AUDIT_LABELS[r.action] ?? r.action}
                      <br />
                      <code className="muted">{r.action}</code>
                    </td>
                    <td className="cell-break">
                      {r.actor.type === "api_key"
                        ? `API key ${shorten(r.actor.id)}`
                        : r.actor.type === "system"
                          ? `stablegate (${r.actor.id ?? "system"})`
                          : `${r.actor.email ?? "unknown"}${r.actor.role ? ` (${r.actor.role})` : ""}`}
                    </td>
                    <td>{r.environment ?? "account"}</td>
                    <td className="cell-break" title={r.target?.id ?? undefined}>
                      {r.target ? `${r.target.type} ${shorten(r.target.id)}` : "—"}
                    </td>
                    <td title={r.userAgent ?? undefined}>{r.clientIp ?? "—"}</td>
                    <td className="cell-text">
                      {Object.keys(r.details).length > 0 ? <code>{JSON.stringify(r.details)}</code> : "—"}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager pagination={log.data.pagination} onPage={setPage} />
        </>
      ) : null}
    </>
  );
}
