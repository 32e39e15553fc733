// Reads a Parquet file with hyparquet (an independent reader: not
// parquet-go) and prints {"columns": [{name, type, logical, repetition}],
// "rows": [...]} as JSON. Timestamps print as their raw integer (nanoseconds
// stay exact); other 64-bit integers as decimal strings.
//
//	npm ci --prefix internal/export/testdata
//	node internal/export/testdata/readparquet.mjs FILE.parquet
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'

const file = await asyncBufferFromFile(process.argv[2])
const metadata = await parquetMetadataAsync(file)
const columns = metadata.schema.slice(1).map(e => ({
  name: e.name,
  type: e.type,
  logical: e.logical_type ? e.logical_type.type : (e.converted_type || null),
  repetition: e.repetition_type,
}))
const raw = v => typeof v === 'bigint' ? v.toString() : v
const rows = await parquetReadObjects({
  file,
  metadata,
  parsers: {
    timestampFromNanoseconds: raw,
    timestampFromMicroseconds: raw,
    timestampFromMilliseconds: raw,
  },
})
process.stdout.write(JSON.stringify({ columns, rows }, (k, v) => raw(v)))
