// Folder-level cycles of src/ (the part of the layering rule dependency-cruiser's module-level
// `circular` cannot see: a.ts → b/x.ts and b/y.ts → a/z.ts is no module cycle, yet the two folders
// depend on each other). Reads `depcruise --output-type json` on stdin; exits 1 on a cycle.
import { readFileSync } from "node:fs";

const result = JSON.parse(readFileSync(0, "utf8"));
const folderOf = (p) => {
  const m = /^src\/([^/]+)\//.exec(p);
  return m ? m[1] : /^src\/[^/]+\.ts$/.test(p) ? p.slice(4, -3) : null;
};
const edges = new Map();
const witness = new Map();
for (const mod of result.modules) {
  const from = folderOf(mod.source);
  if (!from) continue;
  for (const dep of mod.dependencies) {
    const to = folderOf(dep.resolved);
    if (!to || to === from) continue;
    if (!edges.has(from)) edges.set(from, new Set());
    edges.get(from).add(to);
    const key = `${from}>${to}`;
    if (!witness.has(key)) witness.set(key, `${mod.source} → ${dep.resolved}`);
  }
}
// Tarjan's strongly connected components: any component of two or more folders is a cycle.
let index = 0;
const idx = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const cycles = [];
function visit(v) {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v) ?? []) {
    if (!idx.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const comp = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      comp.push(w);
    } while (w !== v);
    if (comp.length > 1) cycles.push(comp.sort());
  }
}
for (const v of edges.keys()) if (!idx.has(v)) visit(v);
if (cycles.length === 0) {
  console.log(`folder cycles: none (${edges.size} folders)`);
} else {
  for (const comp of cycles) {
    console.error(`folder cycle: ${comp.join(" ↔ ")}`);
    for (const a of comp)
      for (const b of comp) if (witness.has(`${a}>${b}`)) console.error(`  ${witness.get(`${a}>${b}`)}`);
  }
  process.exit(1);
}
