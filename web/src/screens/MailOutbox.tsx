import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { getList } from "../api/client";
import type { Mail } from "../api/types";
import { Empty, ErrorNotice, Loading, Notice, PageHeader, Pager } from "../components/ui";
import { formatDate } from "../lib/format";

export default function MailOutbox() {
  const [page, setPage] = useState(1);
  const mail = useQuery({
    queryKey: ["mail", page],
    queryFn: () => getList<Mail>("/api/v1/dashboard/dev/mail", { page, limit: 20 }),
    placeholderData: keepPreviousData,
    refetchInterval: 3_000,
  });
  return (
    <>
      <PageHeader title="Mail outbox" />
      <Notice>
        Development only: without a mail server (<code>SMTP_URL</code>), the e-mails stablegate would send you
        — codes, password reset links — land here. Production never shows this page.
      </Notice>
      {mail.isPending ? <Loading /> : null}
      <ErrorNotice error={mail.error} />
      {mail.data && mail.data.data.length === 0 ? <Empty title="No mail yet" /> : null}
      {mail.data && mail.data.data.length > 0 ? (
        <>
          <ul className="mail-list">
            {mail.data.data.map((m) => (
              <li key={m.id} className="card">
                <p className="mail-subject">{m.subject}</p>
                <p className="muted">
                  To {m.to} · {formatDate(m.createdAt)}
                </p>
                <pre className="code-block">{m.text}</pre>
              </li>
            ))}
          </ul>
          <Pager pagination={mail.data.pagination} onPage={setPage} />
        </>
      ) : null}
    </>
  );
}
