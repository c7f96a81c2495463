// app.js: /play/mnk/: the shared table page (common/table.js) for `mnk`: a board of `rows` × `cols`
// chosen at create (1–19 each), `k` in a row wins, moves `{row, col}`, and `resign` (docs/mnk.md),
// through the module's generated client.
// The module is at genesis on a default node; on a chain made without it the page shows the node's not_found.
import { startTable } from '/common/table.js';

const num = (id, lo, hi) => {
  const v = Number(document.getElementById(id).value);
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${id} must be a whole number from ${lo} to ${hi}`);
  return v;
};

startTable({
  module: 'mnk',
  client: (typed, chain) => new typed.MnkClient(chain),
  shape: (g) => ({ rows: g.rows, cols: g.cols }),
  moveArgs: (i, g) => ({ row: Math.floor(i / g.cols), col: i % g.cols }),
  createArgs: () => {
    const rows = num('rows', 1, 19);
    const cols = num('cols', 1, 19);
    return { rows, cols, k: num('k', 1, Math.max(rows, cols)) };
  },
  resign: true,
});
