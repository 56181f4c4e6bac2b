import { readFileSync } from "node:fs";
import path from "node:path";

/**
 * The role × permission matrix of docs/permissions.md, read from the documentation (not from the
 * code that enforces it): the expected answers of the role and principal matrix tests.
 */

export const ROLES = ["owner", "admin", "developer", "finance", "viewer"] as const;
export type Role = (typeof ROLES)[number];
export type Env = "sandbox" | "production";
export type Cell = "✓" | "—" | "sandbox";

/** The matrix of docs/permissions.md: permission → role → cell. */
export function documentedMatrix(): Map<string, Record<Role, Cell>> {
  const text = readFileSync(path.join(import.meta.dirname, "../../docs/permissions.md"), "utf8");
  const block = /<!-- matrix:begin -->([\s\S]*?)<!-- matrix:end -->/.exec(text)?.[1];
  if (!block) throw new Error("docs/permissions.md has no matrix block");
  const rows = block
    .trim()
    .split("\n")
    .slice(2)
    .map((line) => line.split("|").map((c) => c.trim()));
  const matrix = new Map<string, Record<Role, Cell>>();
  for (const cells of rows) {
    const permission = /`([^`]+)`/.exec(cells[1] ?? "")?.[1];
    if (!permission) throw new Error(`matrix row without a permission: ${cells.join("|")}`);
    const byRole = {} as Record<Role, Cell>;
    ROLES.forEach((role, i) => {
      const cell = cells[3 + i];
      if (cell !== "✓" && cell !== "—" && cell !== "sandbox")
        throw new Error(`bad cell ${cell} (${permission})`);
      byRole[role] = cell;
    });
    matrix.set(permission, byRole);
  }
  return matrix;
}

export const allowedBy = (cell: Cell, env: Env) => cell === "✓" || (cell === "sandbox" && env === "sandbox");
