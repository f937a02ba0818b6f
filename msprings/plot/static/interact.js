// The canvas of msprings.interact: draws what the kernel publishes and reports the mouse.
// No physics here: a drag, a release and a key are messages to Python.  While playing the
// kernel pushes frames (custom messages, positions and strains as binary buffers); the view
// keeps a short buffer of them and draws each at its simulated time on a clock that it
// shares with the other views of the same player (msprings.compare), and acknowledges
// every frame so that the kernel never has more than a window of them in flight.

const ENERGY = [
  ["kinetic", "kinetic", "#e4572e"],
  ["spring", "spring", "#1f78b4"],
  ["gravity", "gravity", "#33a02c"],
  ["dissipated", "dissipated", "#8e5ea2"],
  ["work", "work", "#e6a100"],
];
const TOTAL_COLOUR = "#222";
const FONT = "12px system-ui, -apple-system, 'Segoe UI', sans-serif";
const SMALL = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
const PICK_RADIUS = 12; // px
const CHART_HEIGHT = 150; // px, the ledger strip chart under the scene
const BARS_WIDTH = 230; // px, the energy bars beside the scene
const DELAY = 120; // ms of frames buffered before the clock starts: absorbs the relay's jitter
const MAX_LAG = 0.6; // s of wall time the shown time may trail the newest frame before it skips ahead
const KEYS = { " ": "play", Spacebar: "play", ArrowRight: "step", r: "reset", R: "reset" };

const STRAIN_STEPS = 41; // colours of the strain scale for many springs (an odd count: grey at rest)
const FACE_SHADES = 32;
const FACE_COLOURS = Array.from({ length: FACE_SHADES }, (_, k) => {
  const brightness = 0.45 + (0.55 * k) / (FACE_SHADES - 1);
  return `rgb(${Math.round(120 * brightness + 40)},${Math.round(170 * brightness + 40)},${Math.round(215 * brightness + 35)})`;
});

// Clocks shared by the views of one player (one id per interact or compare), on this page.
// On the page's global object: the front end loads this module once per widget, so a map of
// the module's own would hold one clock per view.
const CLOCKS = (globalThis.__mspringsClocks ??= new Map());
function sharedClock(id) {
  let clock = CLOCKS.get(id);
  if (!clock) {
    const serial = `${id}#${Math.random().toString(36).slice(2, 10)}`; // tells one clock object from another
    clock = { run: -1, time: 0, wall: 0, rate: 1, views: new Set(), serial };
    CLOCKS.set(id, clock);
  }
  return clock;
}

// ---- The lab bench (msprings/plot/_lab.py): arrows, ruler, stopwatch, lines, trace. ----
// Arrows in the order of the columns Python sends: [name, label, colour, width, offset px, unit group].
const ARROWS = [
  ["spring", "spring", "#1f78b4", 2.5, -8, "force"],
  ["damper", "damper", "#8e5ea2", 2.5, -4, "force"],
  ["gravity", "gravity", "#2e7d32", 2.5, 4, "force"],
  ["other", "other forces", "#e6a100", 2.5, 8, "force"],
  ["net", "net force", "#111111", 3.5, 0, "force"],
  ["velocity", "velocity", "#e4572e", 3, 14, "velocity"],
  ["acceleration", "acceleration", "#d81b60", 3, -14, "acceleration"],
];
const ARROW_UNIT_PX = 40; // a unit arrow is this long on screen
const ARROW_MAX_PX = 150;
const UNIT_NAMES = { force: "N", velocity: "m/s", acceleration: "m/s²" };
const LINE_STYLE = {
  rest: ["rest length", "#1f78b4", [8, 5]],
  equilibrium: ["equilibrium", "#2e7d32", [8, 5]],
  lowest: ["lowest point", "#c62828", [2, 4]],
};
const RULER_WIDTH = 30; // px
const TRACE_HEIGHT = 140; // px, the trace canvas under the view

function labNumber(value, digits = 3) {
  if (value === null || value === undefined || !isFinite(value)) return "–";
  return Number(value.toPrecision(digits)).toString();
}

function drawArrow(g, x0, y0, x1, y1, colour, width) {
  const dx = x1 - x0, dy = y1 - y0, length = Math.hypot(dx, dy);
  if (length < 1.5) return;
  const ux = dx / length, uy = dy / length, head = Math.min(10, 0.45 * length) + width;
  g.beginPath();
  g.moveTo(x0, y0);
  g.lineTo(x1 - ux * head * 0.7, y1 - uy * head * 0.7);
  g.strokeStyle = colour;
  g.lineWidth = width;
  g.lineCap = "round";
  g.stroke();
  g.beginPath();
  g.moveTo(x1, y1);
  g.lineTo(x1 - ux * head - uy * head * 0.45, y1 - uy * head + ux * head * 0.45);
  g.lineTo(x1 - ux * head + uy * head * 0.45, y1 - uy * head - ux * head * 0.45);
  g.closePath();
  g.fillStyle = colour;
  g.fill();
  g.lineCap = "butt";
}

// The ruler's corners on screen: top end, bottom end and the unit vectors along and across it.
function rulerGeometry(cam, top, length) {
  const a = cam.project(top[0], top[1], top[2]);
  const b = cam.project(top[0], top[1] - length, top[2]);
  const dx = b[0] - a[0], dy = b[1] - a[1], span = Math.hypot(dx, dy) || 1;
  return { a, b, span, along: [dx / span, dy / span], across: [-dy / span, dx / span] };
}

function drawRuler(g, cam, top, length) {
  const r = rulerGeometry(cam, top, length);
  const [ax, ay] = r.a, w = RULER_WIDTH;
  const corner = (s, t) => [ax + r.along[0] * s + r.across[0] * t, ay + r.along[1] * s + r.across[1] * t];
  g.beginPath();
  const outline = [corner(0, 0), corner(r.span, 0), corner(r.span, w), corner(0, w)];
  outline.forEach(([x, y], k) => (k ? g.lineTo(x, y) : g.moveTo(x, y)));
  g.closePath();
  g.fillStyle = "rgba(255,236,179,0.92)";
  g.strokeStyle = "#a1887f";
  g.lineWidth = 1;
  g.fill();
  g.stroke();
  // Ticks: 50 small divisions, labelled every 10, in cm up to 2 m and in m beyond.
  const centimetres = length <= 2.0;
  const perTick = r.span / 50;
  g.font = "10px system-ui, sans-serif";
  g.fillStyle = "#4e342e";
  g.textAlign = "left";
  g.textBaseline = "middle";
  for (let k = 0; k <= 50; k++) {
    if (perTick < 3 && k % 5) continue;
    const major = k % 10 === 0, middle = k % 5 === 0;
    const [x0, y0] = corner(k * perTick, 0);
    const [x1, y1] = corner(k * perTick, major ? 12 : middle ? 8 : 4);
    g.beginPath(); g.moveTo(x0, y0); g.lineTo(x1, y1);
    g.strokeStyle = "#4e342e"; g.lineWidth = major ? 1.2 : 0.8; g.stroke();
    if (major && k > 0) {
      const value = (length * k) / 50;
      const [lx, ly] = corner(k * perTick, 14);
      g.fillText(centimetres ? `${labNumber(100 * value)}` : `${labNumber(value)}`, lx, ly);
    }
  }
  const [ux, uy] = corner(2, 14);
  g.textBaseline = "top";
  g.fillText(centimetres ? "cm" : "m", ux, uy);
}

function rulerHit(cam, top, length, x, y) {
  const r = rulerGeometry(cam, top, length);
  const px = x - r.a[0], py = y - r.a[1];
  const s = px * r.along[0] + py * r.along[1], t = px * r.across[0] + py * r.across[1];
  return s >= -4 && s <= r.span + 4 && t >= -4 && t <= RULER_WIDTH + 4;
}

function drawLines(g, cam, scene, lab, point) {
  const up = lab.up || [0, 1, 0];
  const labelX = scene.x + scene.w - 8; // at the right end: clear of the model and of the arrow key
  const height = point[0] * up[0] + point[1] * up[1] + point[2] * up[2];
  let labelled = [];
  for (const name of ["rest", "equilibrium", "lowest"]) {
    const h = (lab.lines || {})[name];
    if (!lab.show[name] || h === null || h === undefined) continue;
    const p = [0, 1, 2].map((a) => point[a] + (h - height) * up[a]);
    const [, y] = cam.project(p[0], p[1], p[2]);
    if (!isFinite(y) || y < scene.y || y > scene.y + scene.h) continue;
    const [label, colour, dash] = LINE_STYLE[name];
    g.beginPath();
    g.moveTo(scene.x, y); g.lineTo(scene.x + scene.w, y);
    g.setLineDash(dash); g.strokeStyle = colour; g.lineWidth = 1.5; g.stroke(); g.setLineDash([]);
    // Labels of lines close together are moved apart so they do not overlap.
    let ly = y - 3;
    while (labelled.some((other) => Math.abs(other - ly) < 13)) ly -= 13;
    labelled.push(ly);
    g.font = SMALL; g.textAlign = "right"; g.textBaseline = "bottom";
    g.lineWidth = 3; g.strokeStyle = "rgba(255,255,255,0.9)";
    g.strokeText(label, labelX, ly);
    g.fillStyle = colour;
    g.fillText(label, labelX, ly);
  }
}

function drawNodeArrows(g, cam, screen, lab, arrows, arrowNodes) {
  const units = lab.units || {};
  const count = arrowNodes.length;
  if (arrows.length !== 21 * count) return;
  // Screen direction of a world vector: along the camera's right and up.
  const toScreen = (v) => [
    v[0] * cam.right[0] + v[1] * cam.right[1] + v[2] * cam.right[2],
    -(v[0] * cam.up[0] + v[1] * cam.up[1] + v[2] * cam.up[2]),
  ];
  ARROWS.forEach(([name, , colour, width, offset, group], column) => {
    if (!lab.show[name] || !units[group]) return;
    const perUnit = ARROW_UNIT_PX / units[group];
    for (let s = 0; s < count; s++) {
      const node = arrowNodes[s];
      const x = screen[3 * node], y = screen[3 * node + 1];
      if (!isFinite(x) || !isFinite(y)) continue;
      const base = 21 * s + 3 * column;
      const [dx, dy] = toScreen([arrows[base], arrows[base + 1], arrows[base + 2]]);
      let lx = dx * perUnit, ly = dy * perUnit;
      const length = Math.hypot(lx, ly);
      if (length > ARROW_MAX_PX) { lx *= ARROW_MAX_PX / length; ly *= ARROW_MAX_PX / length; }
      // A sideways offset keeps the forces on one node from hiding each other.
      const sx = length > 0 ? -ly / Math.hypot(lx, ly) : 0, sy = length > 0 ? lx / Math.hypot(lx, ly) : 0;
      const ox = x + sx * offset, oy = y + sy * offset;
      drawArrow(g, ox, oy, ox + lx, oy + ly, colour, width);
    }
  });
}

// The key of the arrows shown, compact: for each unit group a unit arrow and its round
// value, and the colours of the forces shown, named in their colours.
function drawArrowKey(g, scene, lab) {
  const units = lab.units || {};
  const shown = ARROWS.filter(([name, , , , , group]) => lab.show[name] && units[group]);
  if (!shown.length) return;
  const x = scene.x + 12, width = 158, rowHeight = 15;
  const rows = [];
  const forces = shown.filter(([, , , , , group]) => group === "force");
  if (forces.length) {
    rows.push(["unit", forces.length === 1 ? forces[0][2] : "#455a64", `${labNumber(units.force)} N`,
               forces.length === 1 ? forces[0][1] : "force"]);
    // The names of the forces, wrapped to the key's width.
    g.font = SMALL;
    let line = [];
    let used = 0;
    for (const [, label, colour] of forces) {
      const w = g.measureText(label).width + 8;
      if (used + w > width && line.length) { rows.push(["names", line]); line = []; used = 0; }
      line.push([label, colour]);
      used += w;
    }
    if (forces.length > 1 && line.length) rows.push(["names", line]);
  }
  for (const [, label, colour, , , group] of shown) {
    if (group !== "force") rows.push(["unit", colour, `${labNumber(units[group])} ${UNIT_NAMES[group]}`, label]);
  }
  let y = scene.y + 50;
  g.fillStyle = "rgba(255,255,255,0.85)";
  g.fillRect(x - 6, y - 4, width + 10, rowHeight * rows.length + 6);
  g.font = SMALL; g.textBaseline = "middle"; g.textAlign = "left";
  for (const row of rows) {
    if (row[0] === "unit") {
      const [, colour, value, label] = row;
      drawArrow(g, x, y + 5, x + ARROW_UNIT_PX, y + 5, colour, 2.5);
      g.fillStyle = "#333";
      g.fillText(`${label} ${value}`, x + ARROW_UNIT_PX + 6, y + 5);
    } else {
      let at = x;
      for (const [label, colour] of row[1]) {
        g.fillStyle = colour;
        g.fillText(label, at, y + 5);
        at += g.measureText(label).width + 8;
      }
    }
    y += rowHeight;
  }
}

function drawStopwatch(g, scene, lab) {
  const watch = lab.stopwatch || { time: 0, running: false };
  const w = 132, h = 34, x = scene.x + scene.w - w - 10, y = scene.y + 8;
  g.fillStyle = "#263238";
  g.beginPath();
  g.roundRect ? g.roundRect(x, y, w, h, 6) : g.rect(x, y, w, h);
  g.fill();
  g.fillStyle = watch.running ? "#69f0ae" : "#eceff1";
  g.font = "bold 16px ui-monospace, SFMono-Regular, Menlo, monospace";
  g.textAlign = "right"; g.textBaseline = "middle";
  g.fillText(`${watch.time.toFixed(2)} s`, x + w - 10, y + h / 2 + 1);
  g.font = "10px system-ui, sans-serif";
  g.textAlign = "left";
  g.fillStyle = "#b0bec5";
  g.fillText(watch.running ? "running" : "stopwatch", x + 8, y + h / 2 + 1);
}

// Behind the model: the reference lines and the ruler, as on a bench.
function drawLabBehind(g, cam, scene, lab, positions, ruler) {
  if (!lab || !lab.show) return;
  const node = lab.node;
  if (node !== undefined && 3 * node + 2 < positions.length) {
    drawLines(g, cam, scene, lab, [positions[3 * node], positions[3 * node + 1], positions[3 * node + 2]]);
  }
  if (lab.show.ruler && lab.ruler_length) drawRuler(g, cam, ruler, lab.ruler_length);
}

// In front of the model: the arrows, their key and the stopwatch.
function drawLab(g, cam, screen, scene, lab, arrows, arrowNodes) {
  if (!lab || !lab.show) return;
  if (!lab.blown_up) drawNodeArrows(g, cam, screen, lab, arrows, arrowNodes);
  if (!lab.blown_up) drawArrowKey(g, scene, lab);
  if (lab.show.stopwatch) drawStopwatch(g, scene, lab);
}

// The trace: the measured node's displacement against time, with the period readout.
function drawTrace(canvas, lab, trace) {
  const g = canvas.getContext("2d");
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.width / ratio, height = canvas.height / ratio;
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, width, height);
  g.fillStyle = "#fff";
  g.fillRect(0, 0, width, height);
  const left = 92, right = width - 20, top = 28, bottom = height - 22;
  g.font = FONT; g.fillStyle = "#222"; g.textAlign = "left"; g.textBaseline = "top";
  const period = lab.period === null || lab.period === undefined ? "period: after two full swings"
    : `period T = ${lab.period.toFixed(3)} s`;
  const amplitude = lab.amplitude === null || lab.amplitude === undefined ? ""
    : `   amplitude A = ${labNumber(lab.amplitude)} m`;
  g.fillText(`node ${lab.node}: ${period}${amplitude}`, left, 7);
  const rows = trace.length / 2;
  g.strokeStyle = "#ccc";
  g.strokeRect(left + 0.5, top + 0.5, right - left, bottom - top);
  if (rows < 2) return;
  const t0 = trace[0], t1 = trace[2 * (rows - 1)];
  let size = 0;
  for (let r = 0; r < rows; r++) if (isFinite(trace[2 * r + 1])) size = Math.max(size, Math.abs(trace[2 * r + 1]));
  size = size || 1e-3;
  const X = (t) => left + ((t - t0) / (t1 - t0 || 1)) * (right - left);
  const Y = (s) => (top + bottom) / 2 - (s / size) * 0.46 * (bottom - top);
  g.beginPath(); g.moveTo(left, Y(0)); g.lineTo(right, Y(0)); g.strokeStyle = "#bbb"; g.lineWidth = 1; g.stroke();
  g.beginPath();
  for (let r = 0; r < rows; r++) {
    const px = X(trace[2 * r]), py = Y(trace[2 * r + 1]);
    if (r === 0) g.moveTo(px, py); else g.lineTo(px, py);
  }
  g.strokeStyle = "#e4572e"; g.lineWidth = 1.8; g.stroke();
  g.font = SMALL; g.fillStyle = "#444"; g.textAlign = "right"; g.textBaseline = "middle";
  g.fillText(`+${labNumber(size, 2)} m`, left - 6, Y(size));
  g.fillText(`−${labNumber(size, 2)} m`, left - 6, Y(-size));
  g.fillText("0", left - 6, Y(0));
  g.textBaseline = "top"; g.textAlign = "left";
  g.fillText(`${labNumber(t0, 4)} s`, left, bottom + 4);
  g.textAlign = "right";
  g.fillText(`t = ${labNumber(t1, 4)} s`, right, bottom + 4);
  g.save();
  g.translate(12, (top + bottom) / 2); g.rotate(-Math.PI / 2); g.textAlign = "center";
  g.fillText("displacement", 0, 0);
  g.restore();
}

function copyOf(view, Type) {
  if (!view || view.byteLength === 0) return new Type(0);
  const bytes = view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength);
  return new Type(bytes);
}

function format(value) {
  if (value === null || !isFinite(value)) return "overflow";
  const size = Math.abs(value);
  if (size === 0) return "0";
  if (size >= 1e6 || size < 1e-3) return value.toExponential(1);
  if (size >= 1e3) return value.toFixed(0);
  return value.toPrecision(3).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
}

// Diverging strain colours: blue (compressed), grey (at rest), red (stretched).
function strainColour(ratio) {
  const r = Math.max(-1, Math.min(1, ratio));
  const grey = [120, 128, 136];
  const end = r < 0 ? [33, 102, 172] : [214, 39, 40];
  const a = Math.abs(r);
  const c = grey.map((g, i) => Math.round(g + (end[i] - g) * a));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function basis(azimuth, elevation) {
  const az = (azimuth * Math.PI) / 180, el = (elevation * Math.PI) / 180;
  const toward = [Math.sin(az) * Math.cos(el), Math.sin(el), Math.cos(az) * Math.cos(el)];
  const right = [Math.cos(az), 0, -Math.sin(az)];
  const up = [
    toward[1] * right[2] - toward[2] * right[1],
    toward[2] * right[0] - toward[0] * right[2],
    toward[0] * right[1] - toward[1] * right[0],
  ];
  return { toward, right, up };
}

// A framed canvas of width x height CSS pixels drawn at the screen's pixel ratio.
function makeCanvas(width, height, ratio, className, label) {
  const canvas = document.createElement("canvas");
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  canvas.style.border = "1px solid #d0d7de";
  canvas.style.borderRadius = "6px";
  canvas.className = className;
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", label);
  return canvas;
}

function render({ model, el }) {
  const width = model.get("width"), height = model.get("height");
  const scene = { x: 0, y: 0, w: width - BARS_WIDTH, h: height - CHART_HEIGHT };
  const ratio = window.devicePixelRatio || 1;
  const canvas = makeCanvas(width, height, ratio, "msprings-interact",
    "mass-spring system, energy bars and energy ledger; keys: space play or pause, right arrow step, r reset");
  canvas.style.display = "block";
  canvas.style.background = "#fff";
  canvas.style.touchAction = "none";
  // Focusable, and the front end's own shortcuts (JupyterLab's) left alone while it has focus.
  canvas.tabIndex = 0;
  canvas.setAttribute("data-lm-suppress-shortcuts", "true");
  canvas.dataset.frames = "0";
  el.appendChild(canvas);
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);

  const springs = copyOf(model.get("springs"), Int32Array); // the topology is fixed
  const faces = copyOf(model.get("faces"), Int32Array);
  let pinned = copyOf(model.get("pinned"), Uint8Array);
  let positions = copyOf(model.get("positions"), Float32Array);
  let strain = copyOf(model.get("strain"), Float32Array);
  let history = copyOf(model.get("history"), Float32Array);
  let arrows = copyOf(model.get("arrows"), Float32Array);
  let arrowNodes = copyOf(model.get("arrow_nodes"), Int32Array);
  let trace = copyOf(model.get("trace"), Float32Array);
  let movingRuler = null; // {x, y, top}: the ruler being dragged
  const traceCanvas = makeCanvas(width, TRACE_HEIGHT, ratio, "msprings-trace",
    "trace of the measured node's displacement over time");
  traceCanvas.style.marginTop = "4px";
  traceCanvas.style.display = "none";
  el.appendChild(traceCanvas);
  let fit = null; // {center, radius, limit}: grows to keep the motion in view, never shrinks
  let strainScale = 1e-3;
  let energyRange = [0, 0];
  let held = -1, hover = -1, rotating = null, lastDragSent = 0, dragTarget = null, drawn = 0;

  function refit() {
    const n = positions.length / 3;
    if (n === 0) return;
    if (fit === null) {
      // Coordinates at the float32 clip (1e30) belong to a blown-up state: not to the model.
      const lo = [0, 0, 0].map(() => Infinity), hi = [0, 0, 0].map(() => -Infinity);
      for (let i = 0; i < n; i++) for (let a = 0; a < 3; a++) {
        const v = positions[3 * i + a];
        if (Math.abs(v) < 1e29) { lo[a] = Math.min(lo[a], v); hi[a] = Math.max(hi[a], v); }
      }
      if (!lo.every(isFinite)) { lo.fill(-1); hi.fill(1); }
      // The lab bench's hint: points the motion will reach (a spring let go at rest length).
      for (const p of ((model.get("lab") || {}).extent || [])) {
        for (let a = 0; a < 3; a++) {
          if (isFinite(p[a])) { lo[a] = Math.min(lo[a], p[a]); hi[a] = Math.max(hi[a], p[a]); }
        }
      }
      const center = lo.map((l, a) => 0.5 * (l + hi[a]));
      const radius = Math.max(0.5 * Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]), 1e-3);
      fit = { lo, hi, center, radius, limit: 25 * radius };
      return;
    }
    // Grow the box to hold every node near the model; a node that has flown far away
    // (a blow-up) leaves the picture instead of shrinking the model to a dot.
    let grew = false;
    for (let i = 0; i < n; i++) {
      const p = [positions[3 * i], positions[3 * i + 1], positions[3 * i + 2]];
      if (!p.every(isFinite)) continue;
      if (Math.hypot(p[0] - fit.center[0], p[1] - fit.center[1], p[2] - fit.center[2]) > fit.limit) continue;
      for (let a = 0; a < 3; a++) {
        if (p[a] < fit.lo[a]) { fit.lo[a] = p[a]; grew = true; }
        if (p[a] > fit.hi[a]) { fit.hi[a] = p[a]; grew = true; }
      }
    }
    if (grew) {
      fit.center = fit.lo.map((l, a) => 0.5 * (l + fit.hi[a]));
      fit.radius = Math.max(0.5 * Math.hypot(fit.hi[0] - fit.lo[0], fit.hi[1] - fit.lo[1], fit.hi[2] - fit.lo[2]), 1e-3);
    }
  }

  function camera() {
    const b = basis(model.get("azimuth"), model.get("elevation"));
    // The model's area leaves room for the status lines above and the strain key below.
    const top = scene.y + 56, bottom = scene.y + scene.h - 48;
    const scale = (0.47 * Math.min(scene.w, bottom - top)) / fit.radius;
    const c = fit.center;
    const offsetR = c[0] * b.right[0] + c[1] * b.right[1] + c[2] * b.right[2];
    const offsetU = c[0] * b.up[0] + c[1] * b.up[1] + c[2] * b.up[2];
    const cx = scene.x + scene.w / 2, cy = (top + bottom) / 2;
    return {
      ...b, scale,
      project(x, y, z) {
        return [
          cx + scale * (x * b.right[0] + y * b.right[1] + z * b.right[2] - offsetR),
          cy - scale * (x * b.up[0] + y * b.up[1] + z * b.up[2] - offsetU),
          x * b.toward[0] + y * b.toward[1] + z * b.toward[2],
        ];
      },
    };
  }

  function projectAll(cam) {
    const n = positions.length / 3;
    const screen = new Float64Array(3 * n);
    for (let i = 0; i < n; i++) {
      const p = cam.project(positions[3 * i], positions[3 * i + 1], positions[3 * i + 2]);
      screen[3 * i] = p[0]; screen[3 * i + 1] = p[1]; screen[3 * i + 2] = p[2];
    }
    return screen;
  }

  const onCanvas = (x, y) => isFinite(x) && isFinite(y) && Math.abs(x) < 1e5 && Math.abs(y) < 1e5;

  function drawCoil(x0, y0, x1, y1, colour, lineWidth) {
    // A zig-zag spring between the two ends, as in a textbook figure.
    const dx = x1 - x0, dy = y1 - y0, length = Math.hypot(dx, dy);
    if (length < 1) return;
    const ux = dx / length, uy = dy / length, turns = 12, amplitude = 7;
    const lead = Math.min(10, 0.15 * length);
    g.beginPath();
    g.moveTo(x0, y0);
    g.lineTo(x0 + ux * lead, y0 + uy * lead);
    const body = length - 2 * lead;
    for (let k = 1; k < 2 * turns; k++) {
      const s = lead + (body * k) / (2 * turns), side = k % 2 ? amplitude : -amplitude;
      g.lineTo(x0 + ux * s - uy * side, y0 + uy * s + ux * side);
    }
    g.lineTo(x1 - ux * lead, y1 - uy * lead);
    g.lineTo(x1, y1);
    g.strokeStyle = colour;
    g.lineWidth = lineWidth;
    g.lineJoin = "round";
    g.stroke();
  }

  function drawScene() {
    g.save();
    g.beginPath();
    g.rect(scene.x, scene.y, scene.w, scene.h);
    g.clip();
    g.fillStyle = "#f7f9fb";
    g.fillRect(scene.x, scene.y, scene.w, scene.h);
    const n = positions.length / 3;
    if (n === 0 || fit === null) { g.restore(); return; }
    const cam = camera();
    const screen = projectAll(cam);
    drawLabBehind(g, cam, scene, current("lab"), positions, model.get("ruler"));

    // Faces, far to near, lit by a light over the viewer's shoulder.
    const nf = faces.length / 3;
    if (nf > 0) {
      const light = [cam.toward[0] + 0.4 * cam.up[0], cam.toward[1] + 0.4 * cam.up[1], cam.toward[2] + 0.4 * cam.up[2]];
      const norm = Math.hypot(...light);
      const order = [], depth = new Float64Array(nf), shade = new Uint8Array(nf);
      const P = positions;
      for (let f = 0; f < nf; f++) {
        const a = 3 * faces[3 * f], b = 3 * faces[3 * f + 1], c = 3 * faces[3 * f + 2];
        depth[f] = screen[a + 2] + screen[b + 2] + screen[c + 2];
        const u0 = P[b] - P[a], u1 = P[b + 1] - P[a + 1], u2 = P[b + 2] - P[a + 2];
        const w0 = P[c] - P[a], w1 = P[c + 1] - P[a + 1], w2 = P[c + 2] - P[a + 2];
        const n0 = u1 * w2 - u2 * w1, n1 = u2 * w0 - u0 * w2, n2 = u0 * w1 - u1 * w0;
        const size = Math.hypot(n0, n1, n2) || 1;
        // The shade in FACE_SHADES steps, so that runs of faces of one colour fill as one path.
        const lit = Math.abs(n0 * light[0] + n1 * light[1] + n2 * light[2]) / (size * norm);
        shade[f] = Math.round(Math.min(1, lit) * (FACE_SHADES - 1));
        if (isFinite(depth[f]) && onCanvas(screen[a], screen[a + 1]) && onCanvas(screen[b], screen[b + 1]) &&
            onCanvas(screen[c], screen[c + 1])) order.push(f);
      }
      order.sort((p, q) => depth[p] - depth[q]);
      g.lineWidth = 0.6;
      for (let k = 0; k < order.length;) {
        const colour = FACE_COLOURS[shade[order[k]]];
        g.beginPath();
        for (; k < order.length && FACE_COLOURS[shade[order[k]]] === colour; k++) {
          const f = order[k], a = 3 * faces[3 * f], b = 3 * faces[3 * f + 1], c = 3 * faces[3 * f + 2];
          g.moveTo(screen[a], screen[a + 1]);
          g.lineTo(screen[b], screen[b + 1]);
          g.lineTo(screen[c], screen[c + 1]);
          g.closePath();
        }
        g.fillStyle = colour;
        g.strokeStyle = colour;
        g.fill();
        g.stroke();
      }
    }

    // Springs coloured by strain: coils for a few, lines for many.
    const m = springs.length / 2;
    for (let s = 0; s < m; s++) {
      const e = Math.abs(strain[s]);
      if (isFinite(e) && e > strainScale && e < 1e3) strainScale = e;
    }
    const coils = m <= 3 && nf === 0;
    const lineWidth = m > 2000 ? 0.7 : m > 200 ? 1.2 : 3;
    g.globalAlpha = nf > 0 ? 0.75 : 1;
    // Lines in STRAIN_STEPS colours, one path per colour: a few strokes for thousands of springs.
    const buckets = coils ? null : Array.from({ length: STRAIN_STEPS }, () => []);
    for (let s = 0; s < m; s++) {
      const i = springs[2 * s], j = springs[2 * s + 1];
      const x0 = screen[3 * i], y0 = screen[3 * i + 1], x1 = screen[3 * j], y1 = screen[3 * j + 1];
      if (!onCanvas(x0, y0) || !onCanvas(x1, y1)) continue;
      if (coils) { drawCoil(x0, y0, x1, y1, strainColour(strain[s] / strainScale), 2); continue; }
      const r = Math.max(-1, Math.min(1, strain[s] / strainScale)) || 0;
      buckets[Math.round(((r + 1) / 2) * (STRAIN_STEPS - 1))].push(s);
    }
    if (!coils) {
      g.lineWidth = lineWidth;
      buckets.forEach((members, k) => {
        if (members.length === 0) return;
        g.beginPath();
        for (const s of members) {
          const i = springs[2 * s], j = springs[2 * s + 1];
          g.moveTo(screen[3 * i], screen[3 * i + 1]);
          g.lineTo(screen[3 * j], screen[3 * j + 1]);
        }
        g.strokeStyle = strainColour((2 * k) / (STRAIN_STEPS - 1) - 1);
        g.stroke();
      });
    }
    g.globalAlpha = 1;

    // Nodes: masses as balls when there are few, pinned nodes as dark squares.
    const balls = n <= 60 && nf === 0;
    const radius = n <= 3 ? 11 : n <= 20 ? 7 : 5;
    for (let i = 0; i < n; i++) {
      const x = screen[3 * i], y = screen[3 * i + 1];
      if (!onCanvas(x, y)) continue;
      if (pinned[i]) {
        const h = balls ? 7 : 4;
        g.fillStyle = "#263238";
        g.fillRect(x - h, y - h, 2 * h, 2 * h);
      } else if (balls) {
        const shine = g.createRadialGradient(x - radius / 3, y - radius / 3, 1, x, y, radius);
        shine.addColorStop(0, "#9fb3c8");
        shine.addColorStop(1, "#37474f");
        g.beginPath();
        g.arc(x, y, radius, 0, 2 * Math.PI);
        g.fillStyle = shine;
        g.fill();
      }
    }
    const marked = held >= 0 ? held : hover;
    if (marked >= 0 && marked < n) {
      g.beginPath();
      g.arc(screen[3 * marked], screen[3 * marked + 1], balls ? radius + 4 : 7, 0, 2 * Math.PI);
      g.strokeStyle = "#ff8f00";
      g.lineWidth = 2.5;
      g.stroke();
    }
    drawLab(g, cam, screen, scene, current("lab"), arrows, arrowNodes);
    drawStrainKey();
    drawStatus();
    g.restore();
  }

  function drawStrainKey() {
    const x = scene.x + 12, y = scene.y + scene.h - 30, w = 140;
    const gradient = g.createLinearGradient(x, 0, x + w, 0);
    gradient.addColorStop(0, strainColour(-1));
    gradient.addColorStop(0.5, strainColour(0));
    gradient.addColorStop(1, strainColour(1));
    g.fillStyle = gradient;
    g.fillRect(x, y, w, 8);
    g.fillStyle = "#444";
    g.font = SMALL;
    g.textBaseline = "top";
    g.textAlign = "left";
    g.fillText(`−${format(100 * strainScale)}%`, x, y + 10);
    g.textAlign = "center";
    g.fillText("strain", x + w / 2, y + 10);
    g.textAlign = "right";
    g.fillText(`+${format(100 * strainScale)}%`, x + w, y + 10);
    g.textAlign = "right";
    g.fillStyle = "#777";
    g.textBaseline = "top";
    g.fillText("drag a node to move it", scene.x + scene.w - 10, y - 2);
    g.fillText("drag empty space to turn", scene.x + scene.w - 10, y + 12);
  }

  function drawStatus() {
    const status = current("status") || {};
    g.font = FONT;
    g.textBaseline = "top";
    g.textAlign = "left";
    g.fillStyle = "#222";
    const time = status.time !== undefined ? `t = ${format(status.time)} s` : "";
    g.fillText(`${time}   ${status.integrator || ""}`, scene.x + 10, scene.y + 8);
    if (status.dt !== undefined) {
      const critical = status.critical;
      const above = critical !== null && critical !== undefined && status.dt > critical;
      g.fillStyle = status.hidden ? "#757575" : above ? "#c62828" : "#2e7d32";
      const limit = status.hidden ? "critical step ?"
        : critical === null || critical === undefined ? "no stability limit"
        : `critical ${format(critical)} s (${format(status.dt / critical)}×)`;
      g.fillText(`dt = ${format(status.dt)} s, ${limit}`, scene.x + 10, scene.y + 24);
    }
    const message = model.get("message");
    if (message) {
      const words = message.split(" "), lines = [];
      let line = "";
      g.font = FONT;
      for (const word of words) {
        const next = line ? `${line} ${word}` : word;
        if (g.measureText(next).width > scene.w - 48 && line) { lines.push(line); line = word; } else line = next;
      }
      if (line) lines.push(line);
      const boxHeight = 12 + 16 * lines.length, top = scene.y + 44;
      g.fillStyle = "rgba(255,235,238,0.95)";
      g.strokeStyle = "#c62828";
      g.lineWidth = 1.5;
      g.beginPath();
      g.roundRect ? g.roundRect(scene.x + 14, top, scene.w - 28, boxHeight, 6) : g.rect(scene.x + 14, top, scene.w - 28, boxHeight);
      g.fill();
      g.stroke();
      g.fillStyle = "#b71c1c";
      lines.forEach((l, k) => g.fillText(l, scene.x + 24, top + 7 + 16 * k));
    }
  }

  function widen(range, values) {
    for (const v of values) if (isFinite(v)) { range[0] = Math.min(range[0], v); range[1] = Math.max(range[1], v); }
  }

  function drawBars() {
    const x0 = scene.w, top = 44, bottom = scene.h - 62, w = BARS_WIDTH;
    g.fillStyle = "#fff";
    g.fillRect(x0, 0, w, scene.h);
    g.strokeStyle = "#e1e4e8";
    g.beginPath(); g.moveTo(x0 + 0.5, 0); g.lineTo(x0 + 0.5, scene.h); g.stroke();
    g.fillStyle = "#222";
    g.font = "bold 12px system-ui, sans-serif";
    g.textAlign = "left";
    g.textBaseline = "top";
    g.fillText("Energy (J)", x0 + 12, 10);
    const energy = current("energy") || {};
    const values = ENERGY.map(([key]) => energy[key] ?? NaN);
    // With a mystery mass or planet on, the numbers would give it away: the bars stay, rounded.
    const hidden = Boolean((current("lab") || {}).mystery);
    const number = (v) => (hidden ? "?" : format(v));
    widen(energyRange, [0, ...values]);
    const [lo, hi] = energyRange;
    const span = hi - lo || 1;
    const y = (v) => bottom - ((v - lo) / span) * (bottom - top);
    const slot = (w - 20) / ENERGY.length;
    g.strokeStyle = "#999";
    g.beginPath(); g.moveTo(x0 + 8, y(0) + 0.5); g.lineTo(x0 + w - 8, y(0) + 0.5); g.stroke();
    ENERGY.forEach(([, label, colour], k) => {
      const v = values[k], cx = x0 + 10 + slot * (k + 0.5), bw = slot * 0.62;
      const y0 = y(0), y1 = y(Math.max(lo, Math.min(hi, v)));
      g.fillStyle = colour;
      g.fillRect(cx - bw / 2, Math.min(y0, y1), bw, Math.max(Math.abs(y1 - y0), 1));
      g.fillStyle = "#222";
      g.font = SMALL;
      g.textAlign = "center";
      // The value sits at the end of its bar, kept inside the panel, on a white halo; a value
      // wider than its slot (e.g. "0.00554") moves every other one a line further out, so that
      // neighbours do not run into each other.
      const wide = ENERGY.some((_, j) => g.measureText(number(values[j])).width > slot - 4);
      const stagger = wide && k % 2 ? 12 : 0;
      const end = v >= 0 ? Math.min(y0, y1) - 2 - stagger : Math.max(y0, y1) + 2 + stagger;
      g.textBaseline = v >= 0 ? "bottom" : "top";
      const at = v >= 0 ? Math.max(end, top - 2 - stagger) : Math.min(end, bottom - 14 - stagger);
      g.lineWidth = 3;
      g.strokeStyle = "rgba(255,255,255,0.9)";
      g.strokeText(number(v), cx, at);
      g.fillText(number(v), cx, at);
      g.save();
      g.translate(cx, bottom + 6);
      g.textBaseline = "top";
      g.fillStyle = colour;
      g.fillText(label.length > 7 ? `${label.slice(0, 5)}.` : label, 0, 0);
      g.restore();
    });
    const total = values[0] + values[1] + values[2] + values[3] - values[4];
    g.font = SMALL;
    g.textAlign = "left";
    g.textBaseline = "top";
    g.fillStyle = TOTAL_COLOUR;
    g.fillText("kinetic + spring + gravity", x0 + 12, scene.h - 34);
    g.fillText(`+ dissipated − work = ${number(total)}`, x0 + 12, scene.h - 19);
  }

  function drawChart() {
    const top = scene.h + 8, left = 78, right = width - 110, bottom = height - 24;
    g.fillStyle = "#fff";
    g.fillRect(0, scene.h, width, CHART_HEIGHT);
    g.strokeStyle = "#e1e4e8";
    g.beginPath(); g.moveTo(0, scene.h + 0.5); g.lineTo(width, scene.h + 0.5); g.stroke();
    const rows = history.length / 6;
    g.font = SMALL;
    g.fillStyle = "#444";
    g.textAlign = "left";
    g.textBaseline = "top";
    if (rows < 2) {
      g.fillText("energy ledger: press Play or Step", left, top + 40);
      return;
    }
    const t0 = history[0], t1 = history[6 * (rows - 1)] || t0 + 1;
    const total = (row) => row[1] + row[2] + row[3] + row[4] - row[5];
    // A blow-up grows the energy by many orders of magnitude: then the chart switches to
    // a signed logarithmic scale (asinh), on which exponential growth is a straight line.
    let early = 0, lo = 0, hi = 0;
    for (let r = 0; r < rows; r++) {
      const row = history.subarray(6 * r, 6 * r + 6);
      for (const v of [row[1], row[2], row[3], row[4], row[5], total(row)]) {
        if (!isFinite(v)) continue;
        lo = Math.min(lo, v); hi = Math.max(hi, v);
        if (r < Math.max(2, rows / 10)) early = Math.max(early, Math.abs(v));
      }
    }
    early = early || 1;
    const logarithmic = Math.max(Math.abs(lo), Math.abs(hi)) > 1e4 * early;
    const T = (v) => (logarithmic ? Math.asinh(v / early) : v);
    const span = T(hi) - T(lo) || 1;
    const X = (t) => left + ((t - t0) / (t1 - t0 || 1)) * (right - left);
    const Y = (v) => bottom - ((T(Math.max(lo, Math.min(hi, isFinite(v) ? v : hi))) - T(lo)) / span) * (bottom - top);
    g.strokeStyle = "#ccc";
    g.strokeRect(left + 0.5, top + 0.5, right - left, bottom - top);
    g.beginPath(); g.moveTo(left, Y(0) + 0.5); g.lineTo(right, Y(0) + 0.5); g.strokeStyle = "#bbb"; g.stroke();
    const series = ENERGY.map(([, label, colour], k) => [label, colour, (row) => row[k + 1], []]);
    series.push(["total", TOTAL_COLOUR, total, [5, 3]]);
    for (const [, colour, value, dash] of series) {
      g.beginPath();
      for (let r = 0; r < rows; r++) {
        const row = history.subarray(6 * r, 6 * r + 6);
        const px = X(row[0]), py = Y(value(row));
        if (r === 0) g.moveTo(px, py); else g.lineTo(px, py);
      }
      g.setLineDash(dash);
      g.strokeStyle = colour;
      g.lineWidth = 1.6;
      g.stroke();
    }
    g.setLineDash([]);
    g.fillStyle = "#444";
    g.textAlign = "right";
    g.textBaseline = "middle";
    g.fillText(format(hi), left - 6, top + 4);
    g.fillText(format(lo), left - 6, bottom - 4);
    g.save();
    g.translate(10, (top + bottom) / 2);
    g.rotate(-Math.PI / 2);
    g.textAlign = "center";
    g.fillText(logarithmic ? "energy (J), log scale" : "energy (J)", 0, 0);
    g.restore();
    g.textAlign = "left";
    g.textBaseline = "top";
    g.fillText(`${format(t0)} s`, left, bottom + 4);
    g.textAlign = "right";
    g.fillText(`t = ${format(t1)} s`, right, bottom + 4);
    g.textAlign = "left";
    g.textBaseline = "middle";
    series.forEach(([label, colour, , dash], k) => {
      const y = top + 8 + 18 * k;
      g.beginPath(); g.moveTo(right + 12, y); g.lineTo(right + 32, y);
      g.setLineDash(dash); g.strokeStyle = colour; g.lineWidth = 2; g.stroke(); g.setLineDash([]);
      g.fillStyle = "#333";
      g.fillText(label, right + 38, y);
    });
  }

  function draw() {
    const began = performance.now();
    g.clearRect(0, 0, width, height);
    drawScene();
    drawBars();
    drawChart();
    const lab = current("lab") || {};
    const tracing = Boolean(lab.show && lab.show.trace);
    traceCanvas.style.display = tracing ? "block" : "none";
    if (tracing) drawTrace(traceCanvas, lab, trace);
    drawn += 1;
    const status = current("status") || {};
    canvas.dataset.frames = String(drawn);
    canvas.dataset.drawMs = (performance.now() - began).toFixed(1);
    if (status.time !== undefined) canvas.dataset.time = String(status.time);
  }

  function refresh() {
    positions = copyOf(model.get("positions"), Float32Array);
    strain = copyOf(model.get("strain"), Float32Array);
    history = copyOf(model.get("history"), Float32Array);
    pinned = copyOf(model.get("pinned"), Uint8Array);
    arrows = copyOf(model.get("arrows"), Float32Array);
    arrowNodes = copyOf(model.get("arrow_nodes"), Int32Array);
    trace = copyOf(model.get("trace"), Float32Array);
    refit();
    draw();
  }

  model.on("change:frame", refresh);
  model.on("change:generation", () => { fit = null; strainScale = 1e-3; energyRange = [0, 0]; refresh(); });
  model.on("change:azimuth", draw);
  model.on("change:elevation", draw);
  model.on("change:message", draw);
  // While playing, the frames carry the lab's overlays: a change of the trait only redraws.
  model.on("change:lab", () => (model.get("playing") ? draw() : refresh()));
  model.on("change:ruler", draw);

  // -- playing: frames pushed by the kernel, drawn on the shared clock ------------------
  const clock = sharedClock(model.get("clock") || `view-${Math.random()}`);
  let frames = []; // {t, positions, strain, energy, status}, oldest first
  let run = -1, shown = null, received = 0, underruns = 0, raf = null;

  function current(key) {
    return shown !== null && model.get("playing") && shown[key] !== undefined ? shown[key] : model.get(key);
  }

  function newest() {
    return frames.length ? frames[frames.length - 1].t : -Infinity;
  }

  function startPlaying() {
    // The picture before the first frame: the clock moves on from there.
    frames = [{ t: (model.get("status") || {}).time ?? 0, positions: positions.slice(), strain: strain.slice(),
      energy: model.get("energy"), status: model.get("status"), lab: model.get("lab"), arrows, trace }];
    run = -1;
    shown = null;
    charted = frames[0].t;
    clock.views.add(view);
    // Frames the kernel sent before this view drew (shown while playing, a reloaded page)
    // will never be acknowledged: hello tells it to stop waiting for them.
    model.send({ type: "hello" });
    if (raf === null) raf = requestAnimationFrame(animate);
  }

  function stopPlaying() {
    clock.views.delete(view);
    frames = [];
    shown = null;
    canvas.dataset.playing = "false";
  }

  model.on("msg:custom", (content, buffers) => {
    if (!content || content.type !== "frame" || !model.get("playing")) return;
    if (content.run !== run) {
      run = content.run;
      if (clock.run !== run) {
        // The first view to hear of a run starts the clock, DELAY ms from now.
        clock.run = run;
        clock.time = frames.length ? frames[0].t : content.t;
        clock.wall = performance.now() + DELAY;
      }
    }
    clock.rate = content.rate;
    const last = frames[frames.length - 1];
    const stepped = buffers && buffers.length >= 2;
    if (!stepped && last && last.t === content.t) {
      // A frame without a step (slow motion): nothing new to draw.
    } else {
      frames.push({
        t: content.t,
        positions: stepped ? copyOf(buffers[0], Float32Array) : last.positions,
        strain: stepped ? copyOf(buffers[1], Float32Array) : last.strain,
        energy: content.energy ?? (last && last.energy), status: content.status ?? (last && last.status),
        sample: content.sample,
        // The lab bench's overlays of this frame (arrows, trace), drawn with its positions.
        lab: content.lab ?? (last && last.lab),
        arrows: stepped && buffers.length >= 4 ? copyOf(buffers[2], Float32Array) : last && last.arrows,
        trace: stepped && buffers.length >= 4 ? copyOf(buffers[3], Float32Array) : last && last.trace,
      });
    }
    // Bounded while nothing draws (a hidden tab): frames far behind the newest are dropped.
    while (frames.length > 2 && frames[1].t < content.t - clock.rate * 2 * MAX_LAG) { frames.shift(); chart(frames[0]); }
    received += 1;
    canvas.dataset.received = String(received);
    model.send({ type: "ack", run: content.run, seq: content.seq });
  });

  const view = { newest };

  function advanceClock(now) {
    if (now > clock.wall) {
      clock.time += (clock.rate * (now - clock.wall)) / 1000;
      clock.wall = now;
    }
    // Not past what every playing view of this clock has, nor far behind it.
    let limit = Infinity, ahead = -Infinity;
    for (const other of clock.views) { limit = Math.min(limit, other.newest()); ahead = Math.max(ahead, other.newest()); }
    if (clock.time > limit && isFinite(limit)) { clock.time = limit; underruns += 1; }
    if (isFinite(ahead) && ahead - clock.time > clock.rate * MAX_LAG) clock.time = ahead - (clock.rate * DELAY) / 1000;
  }

  function animate(now) {
    raf = null;
    if (!model.get("playing")) { stopPlaying(); return; }
    raf = requestAnimationFrame(animate);
    // A picture at every animation frame of the browser (its refresh rate): between the
    // kernel's frames (fps a second) the positions are interpolated in simulated time.
    if (frames.length === 0) return;
    advanceClock(now);
    const time = clock.time;
    while (frames.length > 1 && frames[1].t <= time) { frames.shift(); chart(frames[0]); }
    const a = frames[0], b = frames[1];
    const s = b && time > a.t ? Math.min(1, (time - a.t) / (b.t - a.t)) : 0;
    positions = b ? mix(a.positions, b.positions, s) : a.positions.slice();
    strain = b ? mix(a.strain, b.strain, s) : a.strain;
    if (held >= 0 && dragTarget !== null) {
      positions[3 * held] = dragTarget[0]; positions[3 * held + 1] = dragTarget[1]; positions[3 * held + 2] = dragTarget[2];
    }
    if (a.arrows) arrows = a.arrows;
    if (a.trace) trace = a.trace;
    shown = { energy: a.energy, lab: a.lab, status: { ...(a.status || {}), time: Math.max(a.t, Math.min(time, b ? b.t : a.t)) } };
    canvas.dataset.playing = "true";
    canvas.dataset.underruns = String(underruns);
    canvas.dataset.clock = clock.serial; // which clock object draws this view, and how many views share it
    canvas.dataset.clockViews = String(clock.views.size);
    refit();
    draw();
  }

  // The ledger chart gets a frame's sample once the clock has reached the frame.
  let charted = -Infinity;
  function chart(frame) {
    if (!frame.sample || !(frame.t > charted)) return;
    charted = frame.t;
    const rows = history.length / 6, keep = Math.min(rows, 599);
    const next = new Float32Array(6 * (keep + 1));
    next.set(history.subarray(6 * (rows - keep)));
    next.set(frame.sample, 6 * keep);
    history = next;
  }

  function mix(p, q, s) {
    if (p.length !== q.length) return q;
    const out = new Float32Array(p.length);
    for (let i = 0; i < p.length; i++) out[i] = p[i] + s * (q[i] - p[i]);
    return out;
  }

  model.on("change:playing", () => { if (model.get("playing")) startPlaying(); else stopPlaying(); });
  if (model.get("playing")) startPlaying();

  canvas.addEventListener("keydown", (event) => {
    const action = KEYS[event.key];
    if (!action || event.ctrlKey || event.metaKey || event.altKey) return;
    event.preventDefault();
    event.stopPropagation();
    model.send({ type: "key", action });
  });

  function pointer(event) {
    const box = canvas.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  }

  function nearest(x, y) {
    if (fit === null) return -1;
    const screen = projectAll(camera());
    let best = -1, distance = PICK_RADIUS;
    for (let i = 0; i < screen.length / 3; i++) {
      const d = Math.hypot(screen[3 * i] - x, screen[3 * i + 1] - y);
      if (d < distance) { distance = d; best = i; }
    }
    return best;
  }

  canvas.addEventListener("pointerdown", (event) => {
    canvas.focus({ preventScroll: true });
    const [x, y] = pointer(event);
    if (x > scene.w || y > scene.h) return;
    canvas.setPointerCapture(event.pointerId);
    if (grabRuler(x, y)) return;
    const node = nearest(x, y);
    if (node >= 0) {
      held = node;
      canvas.style.cursor = "grabbing";
    } else {
      rotating = { x, y, azimuth: model.get("azimuth"), elevation: model.get("elevation") };
      canvas.style.cursor = "move";
    }
    draw();
  });

  canvas.addEventListener("pointermove", (event) => {
    const [x, y] = pointer(event);
    if (movingRuler) { moveRuler(x, y); return; }
    if (held >= 0) {
      // Move the node in the plane of the screen through its current position.
      const cam = camera();
      const p = [positions[3 * held], positions[3 * held + 1], positions[3 * held + 2]];
      const s = cam.project(p[0], p[1], p[2]);
      const dx = (x - s[0]) / cam.scale, dy = -(y - s[1]) / cam.scale;
      const target = [0, 1, 2].map((a) => p[a] + dx * cam.right[a] + dy * cam.up[a]);
      positions[3 * held] = target[0]; positions[3 * held + 1] = target[1]; positions[3 * held + 2] = target[2];
      dragTarget = target;
      const now = performance.now();
      if (now - lastDragSent > 30) {
        lastDragSent = now;
        model.send({ type: "drag", node: held, position: target });
      }
      draw();
    } else if (rotating) {
      const azimuth = rotating.azimuth - 0.5 * (x - rotating.x);
      const elevation = Math.max(-89, Math.min(89, rotating.elevation + 0.5 * (y - rotating.y)));
      model.set("azimuth", azimuth);
      model.set("elevation", elevation);
      draw();
    } else if (x <= scene.w && y <= scene.h) {
      const node = nearest(x, y);
      if (node !== hover) { hover = node; draw(); }
      canvas.style.cursor = node >= 0 || overRuler(x, y) ? "grab" : "move";
    }
  });

  function finish(event) {
    if (movingRuler) { movingRuler = null; model.save_changes(); }
    if (held >= 0) {
      const node = held;
      model.send({ type: "drag", node, position: [positions[3 * node], positions[3 * node + 1], positions[3 * node + 2]] });
      model.send({ type: "release", node });
      held = -1;
      dragTarget = null;
    }
    if (rotating) {
      rotating = null;
      model.save_changes();
    }
    if (event && canvas.hasPointerCapture(event.pointerId)) canvas.releasePointerCapture(event.pointerId);
    canvas.style.cursor = "default";
    draw();
  }
  // The ruler: grabbed where the pointer lands on it, moved in the plane of the screen.
  function grabRuler(x, y) {
    if (!overRuler(x, y)) return false;
    movingRuler = { x, y, top: model.get("ruler").slice() };
    canvas.style.cursor = "grabbing";
    return true;
  }

  function overRuler(x, y) {
    const lab = model.get("lab") || {};
    return fit !== null && Boolean(lab.show && lab.show.ruler && lab.ruler_length)
      && rulerHit(camera(), model.get("ruler"), lab.ruler_length, x, y);
  }

  function moveRuler(x, y) {
    const cam = camera();
    const dx = (x - movingRuler.x) / cam.scale, dy = -(y - movingRuler.y) / cam.scale;
    model.set("ruler", [0, 1, 2].map((a) => movingRuler.top[a] + dx * cam.right[a] + dy * cam.up[a]));
    draw();
  }

  canvas.addEventListener("pointerup", finish);
  canvas.addEventListener("pointercancel", finish);

  refresh();
  return () => { if (raf !== null) cancelAnimationFrame(raf); clock.views.delete(view); };
}

export default { render };
