// Node actions are sent in AWS's batches (rules.nodes.batchSize ids per call), one step per
// batch (`batch_1` … `batch_n`): the split a confirmation shows before sending, and which
// nodes a step of a running operation covers.

import { rules } from './rules.js';

/** The ids in batches of `size`, in the order given (the order the API sends them in). */
export function batches(ids, size = rules.nodes.batchSize) {
  const out = [];
  for (let i = 0; i < ids.length; i += size) out.push(ids.slice(i, i + size));
  return out;
}

/** For a `batch_<i>` step of a node operation: {index, first, last, total} (1-based node
 * positions in the operation's `node_ids`), else null. */
export function batchSpan(op, step) {
  const m = /^batch_(\d+)$/.exec(step.name || '');
  const ids = op && op.params && op.params.node_ids;
  if (!m || !Array.isArray(ids) || !/^nodes\./.test(op.kind || '')) return null;
  const index = Number(m[1]);
  const size = rules.nodes.batchSize;
  const first = (index - 1) * size + 1;
  if (first > ids.length) return null;
  return { index, first, last: Math.min(index * size, ids.length), total: ids.length };
}
