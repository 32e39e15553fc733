#!/usr/bin/env node
// ONNX Runtime anchor: runs the CLIP towers that ort_clip_export.py writes
// (DIR/visual/model.onnx, DIR/textual/model.onnx) with npm's
// onnxruntime-node and the CPU session settings Immich's machine learning
// service uses, so clipidx can be timed against what Immich runs.
//
//   node ort_clip_bench.mjs --serve DIR [--images 4] [--texts 8] [--tower both|image|text]
//     builds the sessions, runs two warm-up passes of each, prints "ready",
//     then for each line "image" or "text" on stdin runs one pass and prints
//     its wall and CPU (all threads) seconds: the protocol of
//     internal/anchors.Process, as torch_clip_bench.py --serve.
//   node ort_clip_bench.mjs --check DIR
//     runs DIR/check's inputs and compares with torch's outputs there
//     (ort_clip_export.py --check); exits 1 beyond the tolerance.
//
// Install onnxruntime-node with `npm ci --prefix internal/anchors`.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import ort from 'onnxruntime-node';

// Immich's defaults for the CPU execution provider (machine-learning,
// sessions/ort.py): two intra-op threads, one inter-op thread, hence
// sequential execution; no CPU memory arena (its MACHINE_LEARNING_MODEL_ARENA
// default); ONNX Runtime's default, full, graph optimisation.
export const sessionOptions = {
  executionProviders: ['cpu'],
  intraOpNumThreads: 2,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  enableCpuMemArena: false,
  graphOptimizationLevel: 'all',
};

const BOS = 49406n;
const EOS = 49407n;

// A small seeded generator, so both runs of a pass see the same inputs.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function open(dir, tower) {
  const path = join(dir, tower, 'model.onnx');
  try {
    return await ort.InferenceSession.create(path, sessionOptions);
  } catch (e) {
    throw new Error(`${path}: ${e.message} (write it with ort_clip_export.py)`);
  }
}

// pixels [n, 3, S, S] in [-1, 1); S from the graph's input when it is fixed.
function pixels(sess, n, rand) {
  const dims = sess.inputMetadata?.[0]?.shape;
  const s = typeof dims?.[2] === 'number' ? dims[2] : 224;
  const a = new Float32Array(n * 3 * s * s);
  for (let i = 0; i < a.length; i++) a[i] = rand() * 2 - 1;
  return new ort.Tensor('float32', a, [n, 3, s, s]);
}

// ids [n, 77]: BOS, random words, EOS last, as clipidx's bench prompts of 77
// tokens (the graph always runs all 77).
function prompts(n, rand) {
  const T = 77;
  const a = new BigInt64Array(n * T);
  for (let b = 0; b < n; b++) {
    for (let j = 0; j < T; j++) {
      a[b * T + j] = j === 0 ? BOS : j === T - 1 ? EOS : BigInt(Math.floor(rand() * 49406));
    }
  }
  return new ort.Tensor('int64', a, [n, T]);
}

async function serve(dir, { images, texts, tower }) {
  const rand = rng(1);
  const passes = {};
  if (tower !== 'text') {
    const s = await open(dir, 'visual');
    const feed = { [s.inputNames[0]]: pixels(s, images, rand) };
    passes.image = () => s.run(feed);
  }
  if (tower !== 'image') {
    const s = await open(dir, 'textual');
    const feed = { [s.inputNames[0]]: prompts(texts, rand) };
    passes.text = () => s.run(feed);
  }
  for (let i = 0; i < 2; i++) {
    for (const fn of Object.values(passes)) await fn();
  }
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const fn = passes[line.trim()];
    if (!fn) {
      process.stdout.write(`error: unknown pass "${line.trim()}" (have ${Object.keys(passes).join(', ')})\n`);
      continue;
    }
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await fn();
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(c0);
    process.stdout.write(`${wall} ${(c.user + c.system) / 1e6}\n`);
  }
}

function readArray(dir, meta, name) {
  const m = meta[name];
  if (!m) throw new Error(`${join(dir, 'check.json')}: no ${name}`);
  const b = readFileSync(join(dir, name + '.bin'));
  const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  if (m.dtype === 'float32') return new ort.Tensor('float32', new Float32Array(ab), m.shape);
  if (m.dtype === 'int64') return new ort.Tensor('int64', new BigInt64Array(ab), m.shape);
  throw new Error(`${join(dir, name + '.bin')}: dtype ${m.dtype}, want float32 or int64`);
}

// Worst row of got against want: the largest absolute difference and the
// smallest cosine similarity.
export function compare(got, want, width) {
  let maxAbs = 0;
  let minCos = 1;
  for (let r = 0; r < want.length / width; r++) {
    let dot = 0, gg = 0, ww = 0;
    for (let j = r * width; j < (r + 1) * width; j++) {
      maxAbs = Math.max(maxAbs, Math.abs(got[j] - want[j]));
      dot += got[j] * want[j];
      gg += got[j] * got[j];
      ww += want[j] * want[j];
    }
    minCos = Math.min(minCos, dot / Math.sqrt(gg * ww));
  }
  return { maxAbs, minCos };
}

async function check(dir) {
  const cdir = join(dir, 'check');
  const meta = JSON.parse(readFileSync(join(cdir, 'check.json'), 'utf8'));
  let ok = true;
  for (const [tower, input, output] of [['visual', 'pixel_values', 'image_embeds'], ['textual', 'input_ids', 'text_embeds']]) {
    const s = await open(dir, tower);
    const out = await s.run({ [s.inputNames[0]]: readArray(cdir, meta, input) });
    const want = readArray(cdir, meta, output);
    const got = out[s.outputNames[0]];
    if (got.dims.join(',') !== want.dims.join(',')) {
      throw new Error(`${tower}: ONNX Runtime gave shape [${got.dims}], torch [${want.dims}]`);
    }
    const { maxAbs, minCos } = compare(got.data, want.data, want.dims[1]);
    // Both float32, the same operations in another order: a few ulps of the
    // embedding's scale, far below what a wrong layer would give.
    const pass = maxAbs <= 1e-3 && minCos >= 0.99999;
    ok &&= pass;
    process.stdout.write(`${tower}: max abs diff ${maxAbs.toExponential(2)}, min cosine ${minCos.toFixed(7)}: ${pass ? 'ok' : 'FAIL'}\n`);
  }
  if (!ok) process.exit(1);
}

const { values: a } = parseArgs({
  options: {
    serve: { type: 'string' },
    check: { type: 'string' },
    images: { type: 'string', default: '4' },
    texts: { type: 'string', default: '8' },
    tower: { type: 'string', default: 'both' },
  },
});
try {
  if (a.check) {
    await check(a.check);
  } else if (a.serve) {
    if (!['both', 'image', 'text'].includes(a.tower)) throw new Error(`--tower ${a.tower}: want both, image or text`);
    await serve(a.serve, { images: Number(a.images), texts: Number(a.texts), tower: a.tower });
  } else {
    throw new Error('want --serve DIR or --check DIR (DIR written by ort_clip_export.py)');
  }
} catch (e) {
  // One line on stdout: what Process.Start reports when "ready" never comes.
  process.stdout.write(`error: ${e.message}\n`);
  process.exit(1);
}
