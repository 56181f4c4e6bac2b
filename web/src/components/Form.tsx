import { createContext, type FormHTMLAttributes, type ReactNode, useContext } from "react";
import type { FieldLabels } from "../lib/field-labels";
import { ConfirmDialog, ErrorNotice } from "./ui";

/**
 * The one form scaffold of the screens (issue #36). A write is a react-query mutation (anything with
 * its `isPending` and `error`); the form around it:
 *
 *   <Form submission={save} onSubmit={() => save.mutate()}>
 *     …fields
 *     <FormError labels={LABELS} />                    the write's error in words (lib/errors.ts)
 *     <SubmitButton pendingLabel="Saving…">Save settings</SubmitButton>
 *   </Form>
 *
 * An error shown outside the form (below a grid of fields) stays an `<ErrorNotice error={…} />`.
 * A confirmation of an action on one thing (a key pair, a member, a withdrawal) is a `ConfirmAction`.
 * Step-up (StepUp.tsx) wraps the mutation's function, not the form: a cancelled step-up rejects with
 * `StepUpCancelled`, which the error display leaves out.
 */
export interface Submission {
  isPending: boolean;
  error: unknown;
}

const IDLE: Submission = { isPending: false, error: null };
const SubmissionContext = createContext<Submission>(IDLE);

/** A `<form>` whose submit runs `onSubmit` instead of loading a page; its parts read `submission`. */
export function Form({
  submission = IDLE,
  onSubmit,
  children,
  ...attributes
}: Omit<FormHTMLAttributes<HTMLFormElement>, "onSubmit"> & {
  /** The write the form runs: its error for `FormError`, its pending state for `SubmitButton`. */
  submission?: Submission;
  onSubmit?(): void;
}) {
  return (
    <SubmissionContext.Provider value={submission}>
      <form
        {...attributes}
        onSubmit={(e) => {
          e.preventDefault();
          onSubmit?.();
        }}
      >
        {children}
      </form>
    </SubmissionContext.Provider>
  );
}

/** The error of the form's write, explained (nothing while there is none). */
export function FormError({ context, labels }: { context?: "login"; labels?: FieldLabels }) {
  const { error } = useContext(SubmissionContext);
  return <ErrorNotice error={error} context={context} labels={labels} />;
}

/** The form's submit button: disabled while the write runs, showing `pendingLabel` (if any) meanwhile. */
export function SubmitButton({
  className = "btn btn-primary",
  pendingLabel,
  children,
}: {
  className?: string;
  pendingLabel?: ReactNode;
  children: ReactNode;
}) {
  const { isPending } = useContext(SubmissionContext);
  return (
    <button type="submit" className={className} disabled={isPending}>
      {isPending && pendingLabel !== undefined ? pendingLabel : children}
    </button>
  );
}

/** A button outside any form that runs `mutation`: disabled while it runs, showing `pendingLabel` meanwhile. */
export function ActionButton({
  mutation,
  onClick,
  className = "btn",
  pendingLabel,
  children,
}: {
  mutation: Pick<Submission, "isPending">;
  onClick(): void;
  className?: string;
  pendingLabel: ReactNode;
  children: ReactNode;
}) {
  return (
    <button type="button" className={className} onClick={onClick} disabled={mutation.isPending}>
      {mutation.isPending ? pendingLabel : children}
    </button>
  );
}

/**
 * The confirmation dialog of an action on `subject` (open while there is one): busy while the
 * write runs, its error inside; confirming runs `onConfirm(subject)`, cancelling closes the dialog
 * and forgets the error.
 */
export function ConfirmAction<S>({
  subject,
  submission,
  onConfirm,
  onClose,
  title,
  confirmLabel,
  danger,
  children,
}: {
  subject: S | null;
  submission: Submission & { reset(): void };
  onConfirm(subject: S): void;
  onClose(): void;
  title: string;
  confirmLabel: string;
  danger?: boolean;
  children?: ReactNode;
}) {
  return (
    <ConfirmDialog
      open={subject !== null}
      title={title}
      confirmLabel={confirmLabel}
      danger={danger}
      busy={submission.isPending}
      onConfirm={() => {
        if (subject !== null) onConfirm(subject);
      }}
      onCancel={() => {
        onClose();
        submission.reset();
      }}
    >
      {children}
      <ErrorNotice error={submission.error} />
    </ConfirmDialog>
  );
}
