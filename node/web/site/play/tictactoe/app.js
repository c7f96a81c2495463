// app.js: /play/tictactoe/: the shared table page (common/table.js) for `tictactoe`: a 3×3 board,
// cells 0–8 row by row, moves `{cell}` (docs/tictactoe.md).
import { startTable } from '/common/table.js';

startTable({
  module: 'tictactoe',
  shape: () => ({ rows: 3, cols: 3 }),
  moveOp: (i) => ({ cell: i }),
  createFields: () => ({}),
});
