// app.js: /play/mnk/: the shared table page (common/table.js) for `mnk`: a board of `rows` × `cols`
// chosen at create (1–19 each), `k` in a row wins, moves `{row, col}`, and `resign` (docs/mnk.md).
// The module is at genesis on a default node; on a chain made without it the page shows the node's not_found.
import { startTable } from '/common/table.js';

const num = (id, lo, hi) => {
  const v = Number(document.getElementById(id).value);
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${id} must be a whole number from ${lo} to ${hi}`);
  return v;
};

startTable({
  module: 'mnk',
  shape: (g) => ({ rows: g.rows, cols: g.cols }),
  moveOp: (i, g) => ({ row: Math.floor(i / g.cols), col: i % g.cols }),
  createFields: () => {
    const rows = num('rows', 1, 19);
    const cols = num('cols', 1, 19);
    return { rows, cols, k: num('k', 1, Math.max(rows, cols)) };
  },
  resign: true,
});
