// The helper from MongoDB's documentation that users copy today: the baseline that the
// tests compare results with and the benchmark compares speed with.
export async function helperGetNextSequenceValue(db, sequenceName) {
  const doc = await db.collection('counters').findOneAndUpdate({ _id: sequenceName }, { $inc: { sequence_value: 1 } }, { returnDocument: 'after' });
  if (!doc) throw new Error(`Sequence '${sequenceName}' not found. Please initialize it.`);
  return doc.sequence_value;
}
