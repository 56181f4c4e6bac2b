import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { del, getList, patch, post } from "../api/client";
import type { Invitation, Member } from "../api/types";
import { ConfirmAction, Form, SubmitButton } from "../components/Form";
import { useStepUp } from "../components/StepUp";
import { Empty, ErrorNotice, Field, Loading, Notice, PageHeader, Pager, StatusBadge } from "../components/ui";
import { formatDate, shorten } from "../lib/format";
import { ASSIGNABLE_ROLES, type AssignableRole, mayManage, ROLE_SUMMARY } from "../lib/permissions";
import { useCan, useSession } from "../session";

type Pending =
  | { kind: "role"; member: Member; role: AssignableRole }
  | { kind: "remove"; member: Member }
  | { kind: "transfer"; member: Member }
  | null;

const TITLES = {
  role: "Change this member's role?",
  remove: "Remove this member?",
  transfer: "Transfer ownership?",
} as const;
const CONFIRM = { role: "Change role", remove: "Remove", transfer: "Transfer ownership" } as const;

function RoleSelect({
  label,
  value,
  onChange,
}: {
  label: string;
  value: AssignableRole;
  onChange(role: AssignableRole): void;
}) {
  return (
    <Field label={label} hint={`${value}: ${ROLE_SUMMARY[value]}.`}>
      {(id, hint) => (
        <select
          id={id}
          aria-describedby={hint}
          value={value}
          onChange={(e) => onChange(e.target.value as AssignableRole)}
        >
          {ASSIGNABLE_ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/**
 * Team accounts (issue #21): the merchant's members and invitations. Inviting, changing a role and
 * transferring ownership grant access to the account: they go through the step-up dialog (the
 * e-mailed code, and the authenticator code when 2FA is on) in the sandbox too. Removing a member
 * and revoking an invitation take access away: a confirmation (remove) or one click (revoke).
 * What the role cannot do is not shown.
 */
export default function Team() {
  const { me, signedIn } = useSession();
  const can = useCan();
  const client = useQueryClient();
  const myRole = me?.user.memberRole ?? null;
  const myId = me?.user.id;
  const canWrite = can("members:write");
  const canTransfer = can("ownership:transfer");
  const stepUp = useStepUp({ always: true, reason: "Team changes decide who can reach your account" });

  const [memberPage, setMemberPage] = useState(1);
  const [invitePage, setInvitePage] = useState(1);
  const [pending, setPending] = useState<Pending>(null);
  const [note, setNote] = useState<string | null>(null);
  const [form, setForm] = useState<{ email: string; role: AssignableRole }>({ email: "", role: "viewer" });

  const members = useQuery({
    queryKey: ["team", "members", memberPage],
    queryFn: () => getList<Member>("/api/v1/dashboard/members", { page: memberPage, limit: 50 }),
    placeholderData: keepPreviousData,
    // Someone may have joined (or left) since: each visit reads the team afresh.
    staleTime: 0,
  });
  const invitations = useQuery({
    queryKey: ["team", "invitations", invitePage],
    queryFn: () => getList<Invitation>("/api/v1/dashboard/invitations", { page: invitePage, limit: 20 }),
    placeholderData: keepPreviousData,
    staleTime: 0,
  });
  const refresh = () => client.invalidateQueries({ queryKey: ["team"] });

  const invite = useMutation({
    mutationFn: () =>
      stepUp.run((codes) =>
        post<Invitation>("/api/v1/dashboard/invitations", {
          email: form.email.trim(),
          role: form.role,
          ...codes,
        }),
      ),
    onSuccess: async (inv) => {
      setNote(
        `Invitation sent to ${inv.email} as ${inv.role}. The link in the e-mail works once, until ${formatDate(inv.expiresAt)}.`,
      );
      setForm({ ...form, email: "" });
      await refresh();
    },
  });
  const revoke = useMutation({
    mutationFn: (inv: Invitation) =>
      del<Invitation>(`/api/v1/dashboard/invitations/${encodeURIComponent(inv.id)}`),
    onSuccess: async (inv) => {
      setNote(`The invitation of ${inv.email} is revoked; its link no longer works.`);
      await refresh();
    },
  });
  const act = useMutation({
    mutationFn: async (p: NonNullable<Pending>): Promise<string> => {
      const path = `/api/v1/dashboard/members/${encodeURIComponent(p.member.id)}`;
      if (p.kind === "role") {
        const m = await stepUp.run((codes) => patch<Member>(path, { role: p.role, ...codes }));
        return `${m.email} is now ${m.role}, from their next request.`;
      }
      if (p.kind === "remove") {
        const m = await del<Member>(path);
        return `${m.email} is removed: they can no longer sign in, and their sessions have ended.`;
      }
      const r = await stepUp.run((codes) =>
        post<{ newOwner: Member; formerOwner: Member }>(`${path}/transfer-ownership`, codes),
      );
      return `${r.newOwner.email} is now the owner; ${r.formerOwner.email} is an admin.`;
    },
    onSuccess: async (text, p) => {
      setPending(null);
      setNote(text);
      await refresh();
      // Ownership moved: this member's own role (and what it may do) changed.
      if (p.kind === "transfer") await signedIn();
    },
  });

  const emailOf = (id: string) =>
    id === myId ? "you" : (members.data?.data.find((m) => m.id === id)?.email ?? shorten(id));
  const manageable = (m: Member) => canWrite && m.id !== myId && mayManage(myRole, m.role);
  const transferable = (m: Member) => canTransfer && m.id !== myId;
  const showActions = canWrite || canTransfer;
  const target = pending?.member;

  return (
    <>
      <PageHeader title="Team" />
      <p className="muted">
        Everyone here signs in with their own e-mail and password, and their role decides what they see and
        do, in both environments. Every change is in the audit log, with who made it.
      </p>
      {note ? <Notice kind="success">{note}</Notice> : null}
      <ErrorNotice error={revoke.error} />

      {canWrite ? (
        <section className="card" aria-labelledby="invite-title">
          <h2 id="invite-title">Invite a member</h2>
          <Form
            className="form-grid"
            submission={invite}
            onSubmit={() => {
              setNote(null);
              invite.mutate();
            }}
          >
            <Field label="E-mail address">
              {(id) => (
                <input
                  id={id}
                  type="email"
                  required
                  autoComplete="off"
                  value={form.email}
                  onChange={(e) => setForm({ ...form, email: e.target.value })}
                />
              )}
            </Field>
            <RoleSelect label="Role" value={form.role} onChange={(role) => setForm({ ...form, role })} />
            <div className="form-actions">
              <SubmitButton pendingLabel="Sending…">Send invitation</SubmitButton>
            </div>
          </Form>
          <p className="hint">
            We e-mail a link that works once, for 7 days; the invitee chooses a password and is signed in.
          </p>
          <ErrorNotice error={invite.error} />
        </section>
      ) : null}

      <section aria-labelledby="members-title">
        <h2 id="members-title">Members</h2>
        {members.isPending ? <Loading label="Loading members…" /> : null}
        <ErrorNotice error={members.error} />
        {members.data && members.data.data.length > 0 ? (
          <>
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Members</caption>
                <thead>
                  <tr>
                    <th scope="col">E-mail</th>
                    <th scope="col">Role</th>
                    <th scope="col">Two-factor</th>
                    <th scope="col">Joined</th>
                    {showActions ? <th scope="col">Actions</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {members.data.data.map((m) => (
                    <tr key={m.id}>
                      <td>
                        <span className="break">{m.email}</span>
                        {m.id === myId ? <span className="muted"> (you)</span> : null}
                      </td>
                      <td>{m.role === "owner" ? <strong>owner</strong> : m.role}</td>
                      <td>{m.twoFactorEnabled ? "on" : "off"}</td>
                      <td>{formatDate(m.createdAt)}</td>
                      {showActions ? (
                        <td className="row-actions">
                          {manageable(m) ? (
                            <>
                              <button
                                type="button"
                                className="btn btn-small"
                                onClick={() =>
                                  // manageable: never the owner, so an assignable role
                                  setPending({ kind: "role", member: m, role: m.role as AssignableRole })
                                }
                              >
                                Change role<span className="visually-hidden"> of {m.email}</span>
                              </button>
                              <button
                                type="button"
                                className="btn btn-small btn-danger"
                                onClick={() => setPending({ kind: "remove", member: m })}
                              >
                                Remove<span className="visually-hidden"> {m.email}</span>
                              </button>
                            </>
                          ) : null}
                          {transferable(m) ? (
                            <button
                              type="button"
                              className="btn btn-small"
                              onClick={() => setPending({ kind: "transfer", member: m })}
                            >
                              Make owner<span className="visually-hidden"> {m.email}</span>
                            </button>
                          ) : null}
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pagination={members.data.pagination} onPage={setMemberPage} />
          </>
        ) : null}
      </section>

      <section aria-labelledby="invitations-title">
        <h2 id="invitations-title">Invitations</h2>
        {invitations.isPending ? <Loading label="Loading invitations…" /> : null}
        <ErrorNotice error={invitations.error} />
        {invitations.data && invitations.data.data.length === 0 ? (
          <Empty title="No invitations yet">
            {canWrite ? <p>Invite someone above: they get an e-mail with a link to join.</p> : null}
          </Empty>
        ) : null}
        {invitations.data && invitations.data.data.length > 0 ? (
          <>
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Invitations</caption>
                <thead>
                  <tr>
                    <th scope="col">E-mail</th>
                    <th scope="col">Role</th>
                    <th scope="col">Status</th>
                    <th scope="col">Invited by</th>
                    <th scope="col">Expires</th>
                    {canWrite ? <th scope="col">Actions</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {invitations.data.data.map((inv) => (
                    <tr key={inv.id}>
                      <td className="break">{inv.email}</td>
                      <td>{inv.role}</td>
                      <td>
                        <StatusBadge status={inv.status} />
                      </td>
                      <td className="break">{emailOf(inv.invitedBy)}</td>
                      <td>{formatDate(inv.expiresAt)}</td>
                      {canWrite ? (
                        <td className="row-actions">
                          {inv.status === "pending" ? (
                            <button
                              type="button"
                              className="btn btn-small btn-danger"
                              disabled={revoke.isPending}
                              onClick={() => {
                                setNote(null);
                                revoke.mutate(inv);
                              }}
                            >
                              Revoke<span className="visually-hidden"> the invitation of {inv.email}</span>
                            </button>
                          ) : null}
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pagination={invitations.data.pagination} onPage={setInvitePage} />
          </>
        ) : null}
      </section>

      <ConfirmAction
        subject={pending}
        submission={act}
        title={pending ? TITLES[pending.kind] : ""}
        confirmLabel={pending ? CONFIRM[pending.kind] : ""}
        danger={pending?.kind !== "role"}
        onConfirm={(p) => {
          setNote(null);
          act.mutate(p);
        }}
        onClose={() => setPending(null)}
      >
        {pending?.kind === "role" && target ? (
          <>
            <p>
              <strong className="break">{target.email}</strong> is {target.role} now. The new role applies
              from their next request.
            </p>
            <RoleSelect
              label="New role"
              value={pending.role}
              onChange={(role) => setPending({ ...pending, role })}
            />
          </>
        ) : null}
        {pending?.kind === "remove" && target ? (
          <p>
            <strong className="break">{target.email}</strong> can no longer sign in, and every session they
            have ends at once. What they did stays in the audit log. To let them back, invite them again.
          </p>
        ) : null}
        {pending?.kind === "transfer" && target ? (
          <p>
            <strong className="break">{target.email}</strong> becomes the owner. You become an admin: you keep
            access to everything but can no longer transfer ownership; only the new owner can give it back.
          </p>
        ) : null}
      </ConfirmAction>
      {stepUp.dialog}
    </>
  );
}
