import { access } from "node:fs/promises";

/** Whether `p` exists (any kind of entry); what cannot be reached counts as absent. */
export async function pathExists(p: string): Promise<boolean> {
  return access(p).then(
    () => true,
    () => false,
  );
}
