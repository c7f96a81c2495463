// app.js: /play/tictactoe/: the shared table page (common/table.js) for `tictactoe`: a 3×3 board,
// cells 0–8 row by row, moves `{cell}` (docs/tictactoe.md), through the module's generated client.
import { startTable } from '/common/table.js';

startTable({
  module: 'tictactoe',
  client: (typed, chain) => new typed.TictactoeClient(chain),
  shape: () => ({ rows: 3, cols: 3 }),
  moveArgs: (i) => ({ cell: i }),
  createArgs: () => ({}),
});
