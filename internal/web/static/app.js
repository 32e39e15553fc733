// The clipidx page: a search box over /api/search, a grid of thumbnails,
// a viewer with "similar images", image drop/paste. No framework, no
// build step: this file is served as it is.
"use strict";

const PAGE = 50;
const $ = (id) => document.getElementById(id);
const state = { mode: "", q: "", quals: "", id: "", k: PAGE, results: [], blob: null, seq: 0, slash: false };

function params() {
  const u = new URLSearchParams(location.search);
  return { q: u.get("q") || "", similar: u.get("similar") || "", under: u.get("under") || "",
           threshold: u.get("threshold") || "", sort: u.get("sort") || "score",
           k: parseInt(u.get("k") || "", 10) || PAGE };
}

function filters() {
  const f = new URLSearchParams();
  if ($("under").value.trim()) f.set("under", $("under").value.trim());
  if ($("threshold").value !== "") f.set("threshold", $("threshold").value);
  if ($("sort").value !== "score") f.set("sort", $("sort").value);
  return f;
}

// Qualifiers live in the query line (q), so the URL is the whole state:
// the chips only read and edit them there. A phrase in double quotes at
// the start of a word is text, key:value words in it too, as the server
// reads the line (SplitQuery): QUAL matches such a phrase whole (m[2]) so
// that no qualifier is read inside it, or a qualifier (m[4], m[5]).
const QUAL = /(^|\s)("[^"]*"?)|(^|\s)(after|before|year|place|near|camera|lens|kind):("[^"]*"|\S+)/gi;

function qualifiers(line) {
  return [...line.matchAll(QUAL)]
    .filter((m) => m[4] !== undefined)
    .map((m) => ({ key: m[4].toLowerCase(), value: m[5].replace(/^"|"$/g, ""), text: m[0].trim() }));
}

// qualifiersOnly is the qualifiers of line, without its words: what a
// search by image keeps of the query line.
function qualifiersOnly(line) {
  return qualifiers(line).map((x) => x.text).join(" ");
}

// byImage reports whether the page shows a search by image (similar
// images, or a dropped image), which the qualifiers filter.
function byImage() {
  return state.mode === "similar" || state.mode === "image";
}

// withQualifier sets key: in line to value (none when value is empty),
// dropping the key's other occurrences.
function withQualifier(line, key, value) {
  let out = line.replace(QUAL, (m, sp1, phrase, sp, k) => (k !== undefined && k.toLowerCase() === key ? sp : m)).replace(/\s+/g, " ").trim();
  if (value) out = (out + " " + key + ":" + (/\s/.test(value) ? '"' + value + '"' : value)).trim();
  return out;
}

function dayAfter(d) {
  const t = new Date(d + "T00:00:00Z");
  t.setUTCDate(t.getUTCDate() + 1);
  return t.toISOString().slice(0, 10);
}

function dayBefore(d) {
  const t = new Date(d + "T00:00:00Z");
  t.setUTCDate(t.getUTCDate() - 1);
  return t.toISOString().slice(0, 10);
}

// chips shows the query's qualifiers, each with a button that removes it,
// and fills the date and place editors from them.
function chips() {
  const line = $("q").value;
  const active = $("active");
  active.replaceChildren();
  for (const x of qualifiers(line)) {
    const c = document.createElement("span");
    c.className = "qual";
    c.textContent = x.text;
    const del = document.createElement("button");
    del.type = "button";
    del.textContent = "✕";
    del.setAttribute("aria-label", "Remove " + x.text);
    del.addEventListener("click", () => edit(line.replace(x.text, "").replace(/\s+/g, " ").trim()));
    c.append(del);
    active.append(c);
  }
  const q = Object.fromEntries(qualifiers(line).map((x) => [x.key, x.value]));
  $("from").value = /^\d{4}-\d{2}-\d{2}$/.test(q.after || "") ? q.after : "";
  $("to").value = /^\d{4}-\d{2}-\d{2}$/.test(q.before || "") ? dayBefore(q.before) : "";
  $("place").value = q.place || "";
}

// edit replaces the query line and searches it (the URL follows). A
// search by image stays one while the line holds qualifiers only: they
// filter its results.
function edit(line) {
  $("q").value = line;
  chips();
  if (byImage() && qualifiersOnly(line) === line.trim()) {
    Object.assign(state, { quals: line.trim(), k: PAGE });
    run(state.mode === "similar" ? "push" : "");
    return;
  }
  if (!line) return;
  Object.assign(state, { mode: "text", q: line, k: PAGE });
  run("push");
}

function applyDate() {
  let line = withQualifier($("q").value, "after", $("from").value);
  line = withQualifier(line, "before", $("to").value ? dayAfter($("to").value) : "");
  $("date-chip").open = false;
  edit(line);
}

function applyPlace() {
  $("place-chip").open = false;
  edit(withQualifier($("q").value, "place", $("place").value.trim()));
}

// pageURL is the address of the current search, to bookmark and share.
function pageURL() {
  const u = new URLSearchParams();
  if (state.mode === "text") u.set("q", state.q);
  if (state.mode === "similar") {
    u.set("similar", state.id);
    if (state.quals) u.set("q", state.quals);
  }
  for (const [k, v] of filters()) u.set(k, v);
  if (state.k !== PAGE) u.set("k", state.k);
  const s = u.toString();
  return s ? "/?" + s : "/";
}

function message(text) {
  $("message").textContent = text || "";
  $("message").hidden = !text;
}

async function api(url, init) {
  const r = await fetch(url, Object.assign({ credentials: "same-origin" }, init));
  let body = null;
  try { body = await r.json(); } catch (e) { /* not JSON */ }
  if (!r.ok) throw new Error((body && body.error) || r.status + " " + r.statusText);
  return body;
}

async function run(push) {
  message("");
  const seq = ++state.seq;
  $("grid").setAttribute("aria-busy", "true");
  try {
    await runSearch(push, seq);
  } finally {
    if (seq === state.seq) $("grid").setAttribute("aria-busy", "false");
  }
}

async function runSearch(push, seq) {
  const f = filters();
  f.set("k", state.k);
  let ans;
  try {
    if (state.mode === "text") {
      f.set("q", state.q);
      ans = await api("/api/search?" + f);
    } else if (state.mode === "similar") {
      f.set("id", state.id);
      if (state.quals) f.set("q", state.quals);
      ans = await api("/api/similar?" + f);
    } else if (state.mode === "image") {
      if (state.quals) f.set("q", state.quals);
      ans = await api("/api/search/image?" + f, { method: "POST", body: state.blob,
        headers: { "Content-Type": "application/octet-stream" } });
    } else {
      return;
    }
  } catch (e) {
    if (seq !== state.seq) return;
    message(e.message);
    render([]);
    return;
  }
  if (seq !== state.seq) return; // a newer search started meanwhile
  if (push === "push") history.pushState(null, "", pageURL());
  else if (push === "replace") history.replaceState(null, "", pageURL());
  state.listing = !!ans.listing;
  render(ans.results);
  const what = { similar: state.label ? "Similar to " + state.label + ": " : "Similar images: ", image: "By image: " }[state.mode] || "";
  $("hint").textContent = what + ans.results.length + " results in " + ans.took_ms.toFixed(1) + " ms";
}

function baseName(p) { return p.split(/[\\/]/).pop(); }

// clock writes a frame's time as a player does: 83.4 → "1:23".
function clock(t) {
  const s = Math.floor(t), h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = String(s % 60).padStart(2, "0");
  return h ? h + ":" + String(m).padStart(2, "0") + ":" + r : m + ":" + r;
}

function render(results) {
  const grid = $("grid");
  const old = state.results;
  // Keep the cells already shown (loading more appends).
  let same = results.length >= old.length && old.every((r, i) => r.id === results[i].id && r.score === results[i].score);
  if (!same) grid.replaceChildren();
  for (let i = same ? old.length : 0; i < results.length; i++) grid.append(cell(results[i], i));
  state.results = results;
  $("more").hidden = results.length < state.k;
}

function cell(r, i) {
  const b = document.createElement("button");
  b.className = "cell";
  b.type = "button";
  b.setAttribute("role", "listitem");
  b.dataset.index = i;
  const score = state.listing ? "" : r.score.toFixed(4) + "  ";
  b.title = score + r.path + (r.offline ? "  (offline: its disk is away)" : "");
  if (r.offline) b.classList.add("offline");
  const img = document.createElement("img");
  img.src = r.thumb;
  img.alt = baseName(r.path);
  img.loading = i < 24 ? "eager" : "lazy";
  const label = document.createElement("span");
  label.className = "label";
  label.textContent = (state.listing ? "" : r.score.toFixed(3) + " · ") + baseName(r.path) + (r.offline ? " · offline" : "");
  b.append(img, label);
  if (r.video) {
    // A video's frame: a play mark with the time it plays from.
    const play = document.createElement("span");
    play.className = "play";
    play.textContent = "▶ " + clock(r.time);
    b.append(play);
  } else if (r.live) {
    // A Live Photo, or a Motion Photo: its movie plays in the viewer.
    const live = document.createElement("span");
    live.className = "play live";
    live.textContent = r.motion ? "MOTION" : "LIVE";
    b.append(live);
  }
  b.addEventListener("click", () => openViewer(i));
  return b;
}

function openViewer(i) {
  const r = state.results[i];
  if (!r) return;
  state.open = i;
  const clip = $("clip");
  clip.pause();
  clip.onended = null;
  clip.hidden = !r.video;
  $("full").hidden = !!r.video;
  if (r.video) {
    // The media fragment starts the player at the frame's time.
    clip.src = r.video + "#t=" + r.time;
    clip.play().catch(() => {});
    $("full").removeAttribute("src");
  } else {
    clip.removeAttribute("src");
    clip.load();
    $("full").src = r.image;
  }
  $("live").hidden = !r.live;
  if (r.motion_unread && /\.(jpe?g|heic|heif)$/i.test(r.path)) {
    // A photo an older clipidx indexed: whether it carries a video (a
    // Motion Photo), the server tells by looking.
    fetch("/live/" + r.id, { method: "HEAD" }).then((res) => {
      if (res.ok && state.results[state.open] === r) {
        r.live = "/live/" + r.id;
        $("live").hidden = false;
      }
    }).catch(() => {});
  }
  $("full").alt = baseName(r.path);
  $("path").textContent = r.path;
  $("score").textContent = (state.listing ? "" : "score " + r.score.toFixed(4)) + (r.offline ? " · offline: " + r.offline + " is away; similar images still work" : "");
  $("meta").textContent = photoLine(r);
  if (!$("viewer").open) $("viewer").showModal();
}

// photoLine is the date, place and camera of a result, as the viewer
// shows them: "2019-07-14 16:05 · Bondi Beach, New South Wales, Australia ·
// Apple iPhone 8"; a date from the file's modification time is marked.
function photoLine(r) {
  const parts = [];
  if (r.taken) {
    const d = r.taken.slice(0, 10) + " " + r.taken.slice(11, 16);
    parts.push(r.taken_source === "mtime" ? d + " (file date)" : d);
  }
  if (r.place) parts.push([r.place.city, r.place.region, r.place.country].filter(Boolean).join(", "));
  else if (r.gps) parts.push(r.gps.lat.toFixed(4) + ", " + r.gps.lon.toFixed(4));
  if (r.camera) parts.push(cameraText(r.camera));
  return parts.join(" · ");
}

// cameraText is a result's camera as one line: make and model, the model
// alone when it names the make ("PENTAX K-1", not "PENTAX PENTAX K-1"),
// then the lens.
function cameraText(c) {
  let cam = c.model || "";
  if (c.make && !cam.toLowerCase().startsWith(c.make.toLowerCase())) cam = [c.make, cam].filter(Boolean).join(" ");
  return [cam, c.lens].filter(Boolean).join(" · ");
}

// playLive plays the open Live Photo's movie in place of its still, and
// shows the still again when it ends.
function playLive() {
  const r = state.results[state.open];
  if (!r || !r.live) return;
  const clip = $("clip");
  clip.src = r.live;
  clip.hidden = false;
  $("full").hidden = true;
  clip.play().catch(() => {});
  clip.onended = () => {
    if (state.results[state.open] !== r) return;
    clip.onended = null;
    clip.hidden = true;
    $("full").hidden = false;
  };
}

function similar() {
  const r = state.results[state.open];
  $("viewer").close();
  const quals = qualifiersOnly($("q").value);
  Object.assign(state, { mode: "similar", id: r.id, k: PAGE, label: baseName(r.path), quals: quals });
  $("q").value = quals;
  chips();
  run("push");
}

async function copyPath() {
  const text = $("path").textContent;
  try {
    await navigator.clipboard.writeText(text);
    $("copy").textContent = "Copied";
  } catch (e) {
    const range = document.createRange();
    range.selectNodeContents($("path"));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    $("copy").textContent = "Selected: press Ctrl+C";
  }
  setTimeout(() => { $("copy").textContent = "Copy path"; }, 1500);
}

function searchBlob(blob) {
  if (!blob || !blob.type.startsWith("image/")) { message("drop or paste an image file"); return; }
  const quals = qualifiersOnly($("q").value);
  Object.assign(state, { mode: "image", blob: blob, k: PAGE, quals: quals });
  $("q").value = quals;
  chips();
  run("");
}

function fromURL() {
  const p = params();
  $("q").value = p.q;
  $("under").value = p.under;
  $("threshold").value = p.threshold;
  $("sort").value = ["score", "date", "-date"].includes(p.sort) ? p.sort : "score";
  chips();
  state.k = p.k;
  if (p.similar) {
    Object.assign(state, { mode: "similar", id: p.similar, label: "", quals: qualifiersOnly(p.q) });
    $("q").value = state.quals;
    chips();
  } else if (p.q) Object.assign(state, { mode: "text", q: p.q });
  else { state.mode = ""; render([]); return; }
  run("");
}

// columns counts the grid's columns, for the up and down arrows.
function columns() {
  const cells = $("grid").children;
  if (cells.length < 2) return 1;
  const top = cells[0].offsetTop;
  let n = 0;
  while (n < cells.length && cells[n].offsetTop === top) n++;
  return n;
}

function keys(e) {
  const inField = e.target.matches("input, textarea");
  if (e.key === "/" && !inField && !$("viewer").open) {
    e.preventDefault();
    state.slash = true; // some key sources send the character separately
    $("q").focus();
    $("q").select();
    return;
  }
  const cells = $("grid").children;
  if (!cells.length || (inField && e.key !== "ArrowDown")) return;
  if ($("viewer").open) {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
    if (step) { e.preventDefault(); openViewer(Math.max(0, Math.min(state.results.length - 1, state.open + step))); }
    return;
  }
  const at = e.target.classList && e.target.classList.contains("cell") ? +e.target.dataset.index : -1;
  const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: columns(), ArrowUp: -columns() }[e.key];
  if (step === undefined) return;
  e.preventDefault();
  const next = at < 0 ? 0 : Math.max(0, Math.min(cells.length - 1, at + step));
  cells[next].focus();
  if (next >= cells.length - 1 && !$("more").hidden) more();
}

function more() {
  state.k += PAGE;
  run("replace");
}

async function status() {
  try {
    const s = await api("/api/status");
    let t = s.images + " images indexed · model " + (s.model || "?");
    if (s.last_build) t += " · last build " + new Date(s.last_build.time).toLocaleString() + (s.last_build.complete ? "" : " (interrupted)");
    else t += " · no build finished yet";
    if (state.lastImages !== undefined && s.images !== state.lastImages) t += " · building: " + (s.images - state.lastImages > 0 ? "+" : "") + (s.images - state.lastImages) + " since last look";
    state.lastImages = s.images;
    building(s.build);
    // New results landed (a watcher's commit): run the query shown again,
    // at most every 5 s while a build runs (a text query runs the model).
    if (state.shownImages === undefined) state.shownImages = s.images;
    const due = !(s.build && s.build.running) || Date.now() - (state.rerunAt || 0) >= 5000;
    if (s.images !== state.shownImages && due && state.mode && !state.rerunning) {
      Object.assign(state, { shownImages: s.images, rerunAt: Date.now(), rerunning: true });
      run("").finally(() => { state.rerunning = false; });
    }
    if (s.model_error) t += " · model: " + s.model_error + " (similar-image search still works)";
    $("status").textContent = t;
    $("status").classList.toggle("error", !!s.model_error);
  } catch (e) {
    $("status").textContent = "status: " + e.message;
    $("status").classList.add("error");
  }
}

// building shows a running build, from any process: "indexing 37 of 500
// new photos"; the status is polled faster while it runs.
function building(b) {
  const p = b && b.running ? b.progress : null;
  let t = "";
  if (b && b.running) {
    t = p && p.phase === "index" ? "indexing " + p.done + " of " + p.total + " new " + (p.total === 1 ? "photo" : "photos") : "looking for new photos…";
    if (p && p.failed) t += " (" + p.failed + " failed)";
    if (p && p.eta_s > 0) t += " · about " + Math.ceil(p.eta_s) + " s left";
  }
  $("building").textContent = t;
  $("building").hidden = !t;
  state.pollMS = b && b.running ? 1000 : 5000;
}

function poll() {
  status().finally(() => setTimeout(poll, state.pollMS || 5000));
}

function init() {
  // The token travels in the URL once; the server keeps it in a cookie.
  const u = new URLSearchParams(location.search);
  if (u.has("token")) { u.delete("token"); history.replaceState(null, "", "/" + (u.toString() ? "?" + u : "")); }
  $("form").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = $("q").value.trim();
    if (byImage() && qualifiersOnly(q) === q) { edit(q); return; }
    if (!q) return;
    Object.assign(state, { mode: "text", q: q, k: PAGE });
    run("push");
  });
  $("more").addEventListener("click", more);
  $("q").addEventListener("input", chips);
  $("date-apply").addEventListener("click", applyDate);
  $("place-apply").addEventListener("click", applyPlace);
  $("place").addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); applyPlace(); } });
  $("sort").addEventListener("change", () => { if (state.mode) { state.k = PAGE; run("push"); } });
  new IntersectionObserver((es) => { if (es.some((x) => x.isIntersecting) && !$("more").hidden) more(); }).observe($("more"));
  $("close").addEventListener("click", () => $("viewer").close());
  $("copy").addEventListener("click", copyPath);
  $("similar").addEventListener("click", similar);
  $("live").addEventListener("click", playLive);
  $("viewer").addEventListener("close", () => {
    $("clip").pause();
    const c = $("grid").children[state.open];
    if (c) c.focus();
  });
  document.addEventListener("keydown", keys);
  document.addEventListener("keypress", (e) => {
    if (state.slash && e.key === "/") e.preventDefault();
    state.slash = false;
  });
  window.addEventListener("popstate", fromURL);
  document.addEventListener("paste", (e) => {
    const f = [...e.clipboardData.files].find((x) => x.type.startsWith("image/"));
    if (f) { e.preventDefault(); searchBlob(f); }
  });
  document.addEventListener("dragover", (e) => { e.preventDefault(); $("drop").hidden = false; });
  document.addEventListener("dragleave", (e) => { if (!e.relatedTarget) $("drop").hidden = true; });
  document.addEventListener("drop", (e) => {
    e.preventDefault();
    $("drop").hidden = true;
    searchBlob(e.dataTransfer.files[0]);
  });
  fromURL();
  poll();
}

init();
