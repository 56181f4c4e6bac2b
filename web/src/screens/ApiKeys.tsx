import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { del, getList, post } from "../api/client";
import type { ApiKey, KeyPair } from "../api/types";
import { ConfirmAction } from "../components/Form";
import { useStepUp } from "../components/StepUp";
import { Empty, ErrorNotice, Loading, Notice, PageHeader, RevealOnce, StatusBadge } from "../components/ui";
import { formatDate } from "../lib/format";
import { useCan, useEnvKey, useSession } from "../session";

type Pending = { kind: "rotate" | "revoke"; key: ApiKey } | null;

export default function ApiKeys() {
  const { environment } = useSession();
  const canWrite = useCan()("api_keys:write");
  const client = useQueryClient();
  const [pending, setPending] = useState<Pending>(null);
  const [revealed, setRevealed] = useState<KeyPair | null>(null);
  const [revokedNote, setRevokedNote] = useState<string | null>(null);
  // Production key pairs need the e-mailed code (and TOTP); revoking does not.
  const stepUp = useStepUp();
  const keys = useQuery({
    queryKey: useEnvKey("api-keys"),
    queryFn: () => getList<ApiKey>("/api/v1/dashboard/api-keys", { limit: 100 }),
  });
  const refresh = () => client.invalidateQueries({ queryKey: [environment, "api-keys"] });
  const create = useMutation({
    mutationFn: () =>
      stepUp.run((codes) => post<KeyPair>("/api/v1/dashboard/api-keys", { environment, ...codes })),
    onSuccess: async (k) => {
      setRevealed(k);
      await refresh();
    },
  });
  const act = useMutation({
    mutationFn: async (p: NonNullable<Pending>) =>
      p.kind === "rotate"
        ? {
            kind: "rotate" as const,
            pair: await stepUp.run((codes) =>
              post<KeyPair>(`/api/v1/dashboard/api-keys/${p.key.id}/rotate`, codes),
            ),
          }
        : { kind: "revoke" as const, key: await del<ApiKey>(`/api/v1/dashboard/api-keys/${p.key.id}`) },
    onSuccess: async (r) => {
      setPending(null);
      if (r.kind === "rotate") setRevealed(r.pair);
      else setRevokedNote(`Key ${r.key.apiKey} is revoked; requests with it now fail.`);
      await refresh();
    },
  });

  const active = keys.data?.data.filter((k) => k.status === "active") ?? [];
  const inactive = keys.data?.data.filter((k) => k.status !== "active") ?? [];
  return (
    <>
      <PageHeader title="API keys">
        {canWrite ? (
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              setRevokedNote(null);
              create.mutate();
            }}
            disabled={create.isPending}
          >
            Create {environment} key pair
          </button>
        ) : null}
      </PageHeader>
      <p className="muted">
        Your server sends the key in the <code>apikey</code> header and the secret in{" "}
        <code>x-api-secret</code>.{" "}
        {environment === "sandbox"
          ? "Sandbox keys start with ak_test_."
          : "Production keys start with ak_live_."}{" "}
        Keep the secret on your server only.
      </p>
      <ErrorNotice error={create.error} />
      {revealed ? (
        <RevealOnce
          title={`New ${revealed.environment} key pair`}
          items={[
            { label: "API key", value: revealed.apiKey },
            { label: "API secret", value: revealed.apiSecret },
          ]}
          onDone={() => setRevealed(null)}
        />
      ) : null}
      {revokedNote ? <Notice kind="success">{revokedNote}</Notice> : null}
      {keys.isPending ? <Loading /> : null}
      <ErrorNotice error={keys.error} />
      {keys.data && active.length === 0 ? (
        <Empty title={`No active ${environment} keys`}>
          <p>Create a key pair to call the API from your server.</p>
        </Empty>
      ) : null}
      {active.length > 0 ? (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Active API keys</caption>
            <thead>
              <tr>
                <th scope="col">API key</th>
                <th scope="col">Secret</th>
                <th scope="col">Created</th>
                {canWrite ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {active.map((k) => (
                <tr key={k.id}>
                  <td>
                    <code className="break">{k.apiKey}</code>
                  </td>
                  <td>
                    <code>{k.secretHint}</code>
                  </td>
                  <td>{formatDate(k.createdAt)}</td>
                  {canWrite ? (
                    <td className="row-actions">
                      <button
                        type="button"
                        className="btn btn-small"
                        onClick={() => setPending({ kind: "rotate", key: k })}
                      >
                        Rotate<span className="visually-hidden"> {k.apiKey}</span>
                      </button>
                      <button
                        type="button"
                        className="btn btn-small btn-danger"
                        onClick={() => setPending({ kind: "revoke", key: k })}
                      >
                        Revoke<span className="visually-hidden"> {k.apiKey}</span>
                      </button>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {inactive.length > 0 ? (
        <details className="card">
          <summary>Revoked and rotated keys ({inactive.length})</summary>
          <ul className="plain-list">
            {inactive.map((k) => (
              <li key={k.id}>
                <code className="break">{k.apiKey}</code> <StatusBadge status={k.status} /> {k.revokedReason}{" "}
                · {formatDate(k.revokedAt)}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
      <ConfirmAction
        subject={pending}
        submission={act}
        title={pending?.kind === "rotate" ? "Rotate this key pair?" : "Revoke this key pair?"}
        confirmLabel={pending?.kind === "rotate" ? "Rotate" : "Revoke"}
        danger
        onConfirm={(p) => act.mutate(p)}
        onClose={() => setPending(null)}
      >
        <p>
          <code className="break">{pending?.key.apiKey}</code> stops working <strong>at once</strong>.{" "}
          {pending?.kind === "rotate"
            ? "A new pair is created and shown once; put it on your server right away."
            : "Any server still using it will get errors."}
        </p>
      </ConfirmAction>
      {stepUp.dialog}
    </>
  );
}
