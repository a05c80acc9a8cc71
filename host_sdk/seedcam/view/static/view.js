// seedcam view: one WebSocket to the viewer, a canvas with the preview JPEG and the overlays of
// the Result of the same frame, a HUD and controls whose applied values the sensor echoes back.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const token = new URLSearchParams(location.search).get("token");
  // class colours: the same class id gets the same colour in every tab
  const PALETTE = ["#ff00ff", "#00ff40", "#00c8ff", "#ffd000", "#ff5000", "#8040ff", "#00ffd0", "#ff0080"];
  const colourOf = (classId) => PALETTE[classId % PALETTE.length];

  const state = {
    socket: null,
    connection: "connecting",
    retryMs: 500,
    nextId: 1,
    pending: new Map(),
    paused: false,
    zoom: 2,
    shown: null, // {header, bitmap}: the frame on the canvas
    latest: null, // newest frame (shown unless paused)
    lastResult: null,
    shownTimes: [],
    framesShown: 0,
    readOnly: false,
    hello: null,
    config: {},
    progressSeen: 0,
  };
  window.seedcamView = state; // for tests and the curious

  // ------------------------------------------------------------------ the socket

  function connect() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const query = token ? `?token=${encodeURIComponent(token)}` : "";
    const socket = new WebSocket(`${scheme}//${location.host}/ws${query}`);
    socket.binaryType = "arraybuffer";
    state.socket = socket;
    setConnection("connecting");
    socket.onopen = () => { state.retryMs = 500; };
    socket.onmessage = (event) => {
      if (typeof event.data === "string") onText(JSON.parse(event.data));
      else onFrame(event.data);
    };
    socket.onclose = (event) => {
      state.socket = null;
      if (event.code === 1008) { setConnection("closed"); log(`refused: ${event.reason}`); return; }
      setConnection("reconnecting");
      setTimeout(connect, state.retryMs);
      state.retryMs = Math.min(state.retryMs * 2, 5000);
    };
  }

  function setConnection(value) {
    state.connection = value;
    const el = $("conn");
    el.textContent = value;
    el.dataset.state = value;
  }

  function send(message) {
    if (!state.socket || state.socket.readyState !== WebSocket.OPEN) { log("not connected"); return null; }
    const id = state.nextId++;
    state.socket.send(JSON.stringify({ type: "control", id, ...message }));
    return id;
  }

  function log(text) {
    const line = document.createElement("div");
    line.textContent = `${new Date().toLocaleTimeString()} ${text}`;
    $("log").prepend(line);
    while ($("log").childElementCount > 50) $("log").lastChild.remove();
  }

  // ------------------------------------------------------------------ messages

  function onText(msg) {
    switch (msg.type) {
      case "hello": onHello(msg); break;
      case "result": state.lastResult = msg.result; drawPanels(msg.result); break;
      case "hud": drawHud(msg); break;
      case "applied": case "state": onApplied(msg); break;
      case "error": onError(msg); break;
      case "progress": onProgress(msg); break;
      case "event": log(msg.message); break;
      default: break;
    }
  }

  async function onFrame(buffer) {
    const view = new DataView(buffer);
    const length = view.getUint32(0);
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, length)));
    const blob = new Blob([new Uint8Array(buffer, 4 + length)], { type: "image/jpeg" });
    let bitmap;
    try { bitmap = await createImageBitmap(blob); } catch (err) { log(`bad JPEG of frame ${header.frame_id}`); return; }
    state.latest = { header, bitmap };
    state.lastResult = header.result;
    if (!state.paused) show(state.latest);
  }

  function onHello(msg) {
    state.hello = msg;
    state.readOnly = msg.read_only;
    setConnection("live");
    const dev = msg.device;
    $("device").textContent = dev ? `${dev.board} ${dev.serial_number} · firmware ${dev.firmware_version}` : "";
    $("readonly-banner").hidden = !msg.read_only;
    buildTasks(msg.tasks);
    for (const [key, value] of Object.entries(msg.config || {})) showConfig(key, value, "");
    if (msg.preview && msg.preview.fps !== undefined) showPreview(msg.preview);
    if (msg.catalog) buildCatalog(msg.catalog, msg.models || []);
    if (msg.hud) drawHud(msg.hud);
    for (const el of document.querySelectorAll(".control input, .control button, .control select")) {
      el.disabled = msg.read_only;
    }
  }

  function onApplied(msg) {
    const echo = msg.type === "applied";
    if (msg.action === "tasks") {
      for (const box of document.querySelectorAll("#tasks input")) box.checked = msg.value.includes(box.value);
      setEcho("tasks-applied", `running: ${msg.value.join(", ") || "none"}`);
    } else if (msg.action === "config" || (msg.action === "get" && echo)) {
      showConfig(msg.key, msg.value, msg.note || "");
    } else if (msg.action === "preview") {
      showPreview(msg.value);
    } else if (msg.action === "save") {
      setEcho("save-applied", msg.note, !Object.values(msg.value).some(Boolean));
    } else if (msg.action === "install") {
      $("install-progress").value = $("install-progress").max;
      const already = msg.value.report && msg.value.report.already_installed ? " (it was there already)" : "";
      setEcho("install-applied", `installed ${msg.value.installed}${already}`);
      if (msg.value.models) buildModels(msg.value.models);
    }
    if (echo) state.pending.delete(msg.id);
  }

  function onError(msg) {
    const target = {
      tasks: "tasks-applied", preview: "preview-applied", install: "install-applied", save: "save-applied",
    }[msg.action];
    const pending = state.pending.get(msg.id);
    setEcho(pending || target || "tasks-applied", msg.message, true);
    state.pending.delete(msg.id);
    log(`error: ${msg.message}`);
  }

  function onProgress(msg) {
    state.progressSeen += 1;
    const bar = $("install-progress");
    bar.hidden = false;
    bar.max = msg.total || 1;
    bar.value = msg.sent;
    setEcho("install-applied", `${msg.name}: ${msg.sent} of ${msg.total} bytes`);
  }

  function setEcho(id, text, isError = false) {
    const el = $(id);
    if (!el) return;
    el.textContent = text;
    el.classList.toggle("error", isError);
  }

  function showConfig(key, value, note) {
    const suffix = note ? ` (${note})` : "";
    if (key === "detect.score_threshold") {
      $("threshold").value = value;
      $("threshold-value").textContent = Number(value).toFixed(2);
      setEcho("threshold-applied", `device: ${Number(value).toFixed(2)}${suffix}`);
    } else if (key === "ocr.pattern") {
      $("ocr-pattern").value = value;
      setEcho("ocr-pattern-applied", `device: ${value || "(any)"}${suffix}`);
    } else if (key === "ocr.lexicon") {
      $("ocr-lexicon").value = (value || []).join(", ");
      setEcho("ocr-lexicon-applied", `device: ${(value || []).join(", ") || "(any)"}${suffix}`);
    }
    state.config[key] = value;
  }

  function showPreview(p) {
    $("preview-fps").value = p.fps || $("preview-fps").value;
    $("preview-quality").value = p.quality;
    $("preview-width").value = p.max_width;
    setEcho("preview-applied", `${p.fps} fps, quality ${p.quality}, ≤${p.max_width} px` + (p.message ? ` — ${p.message}` : ""));
  }

  // ------------------------------------------------------------------ drawing

  function show(frame) {
    state.shown = frame;
    state.framesShown += 1;
    const now = performance.now();
    state.shownTimes.push(now);
    while (state.shownTimes.length && now - state.shownTimes[0] > 2000) state.shownTimes.shift();
    $("frame-id").textContent = frame.header.frame_id;
    draw();
    drawPanels(frame.header.result);
  }

  function draw() {
    const frame = state.shown;
    if (!frame) return;
    const canvas = $("view");
    const zoom = state.zoom;
    const w = frame.header.width * zoom;
    const h = frame.header.height * zoom;
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    const ctx = canvas.getContext("2d");
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(frame.bitmap, 0, 0, w, h);
    const result = frame.header.result;
    const minScore = Number($("score-filter").value);
    ctx.lineWidth = 2 * zoom;
    ctx.font = `${10 * zoom}px sans-serif`;
    ctx.textBaseline = "bottom";
    if ($("ov-boxes").checked) {
      for (const det of result.detections || []) {
        if (det.score < minScore) continue;
        const b = det.box;
        const colour = colourOf(det.class_id);
        ctx.strokeStyle = colour;
        ctx.strokeRect(b.x_min * w, b.y_min * h, (b.x_max - b.x_min) * w, (b.y_max - b.y_min) * h);
        const label = `${det.label} ${det.score.toFixed(2)}`;
        const tw = ctx.measureText(label).width + 4;
        const ty = Math.max(12 * zoom, b.y_min * h);
        ctx.fillStyle = colour;
        ctx.fillRect(b.x_min * w - zoom, ty - 12 * zoom, tw, 12 * zoom);
        ctx.fillStyle = "#000";
        ctx.fillText(label, b.x_min * w + 1, ty - zoom);
      }
    }
    if ($("ov-ocr").checked) {
      for (const line of result.text_lines || []) {
        if (!line.box) continue;
        const b = line.box;
        ctx.strokeStyle = "#ffffff";
        ctx.setLineDash([4 * zoom, 3 * zoom]);
        ctx.strokeRect(b.x_min * w, b.y_min * h, (b.x_max - b.x_min) * w, (b.y_max - b.y_min) * h);
        ctx.setLineDash([]);
        ctx.fillStyle = "rgba(0,0,0,.7)";
        const text = `${line.text} (${line.confidence.toFixed(2)})`;
        ctx.fillRect(b.x_min * w, b.y_max * h, ctx.measureText(text).width + 6, 13 * zoom);
        ctx.fillStyle = "#fff";
        ctx.textBaseline = "top";
        ctx.fillText(text, b.x_min * w + 3, b.y_max * h + zoom);
        ctx.textBaseline = "bottom";
      }
    }
  }

  function drawPanels(result) {
    drawGauge(result.lane);
    const list = $("classes");
    list.replaceChildren();
    if ($("ov-class").checked) {
      for (const c of result.classifications || []) {
        const item = document.createElement("li");
        item.textContent = `${c.label} ${c.score.toFixed(2)}`;
        list.append(item);
      }
    }
  }

  function drawGauge(lane) {
    const canvas = $("gauge");
    const ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    const text = $("lane-text");
    if (!lane || !$("ov-lane").checked) { text.textContent = lane ? "" : "lane task off"; return; }
    // top-down: the car at the bottom centre, 1 m ahead = the top; lines from offset, heading, curvature
    const scale = canvas.height / 1.0;
    const cx = canvas.width / 2;
    const half = (lane.lane_width_m || 0.3) / 2;
    ctx.lineWidth = 2;
    for (const side of [-1, 1]) {
      ctx.strokeStyle = lane.status === "lost" ? "#666" : "#ffd000";
      ctx.beginPath();
      for (let i = 0; i <= 20; i += 1) {
        const x = i / 20; // metres ahead
        const y = side * half - lane.offset_m - lane.heading_rad * x + 0.5 * lane.curvature_per_m * x * x;
        const px = cx - y * scale;
        const py = canvas.height - x * scale;
        if (i === 0) ctx.moveTo(px, py); else ctx.lineTo(px, py);
      }
      ctx.stroke();
    }
    ctx.fillStyle = "#00c8ff";
    ctx.fillRect(cx - 4, canvas.height - 10, 8, 10);
    const status = (lane.status || "unknown").replace("_", " ");
    text.innerHTML = "";
    for (const [name, value] of [
      ["status", status],
      ["offset", `${(lane.offset_m * 100).toFixed(1)} cm`],
      ["heading", `${(lane.heading_rad * 57.2958).toFixed(1)}°`],
      ["curvature", `${lane.curvature_per_m.toFixed(3)} /m`],
    ]) {
      const row = document.createElement("div");
      row.textContent = `${name}: ${value}`;
      text.append(row);
    }
  }

  function drawHud(hud) {
    const fmt = (v, digits = 1) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
    $("hud-sensor-fps").textContent = fmt(hud.sensor_fps);
    $("hud-link-fps").textContent = fmt(hud.link_fps);
    $("hud-shown-fps").textContent = fmt(state.shownTimes.length / 2);
    $("hud-latency").textContent = fmt(hud.latency_ms);
    const e = hud.link_errors || {};
    $("hud-errors").textContent = `crc ${e.crc} drops ${e.drops} resyncs ${e.resyncs}`;
    $("hud-uptime").textContent = `${fmt(hud.uptime_s, 0)} s`;
    $("hud-firmware").textContent = hud.firmware || "–";
    $("hud-tabs").textContent = hud.tabs;
    $("hud-models").textContent = (hud.models || []).join(", ") || "–";
    if (state.connection === "live" && hud.connection !== "connected") setConnection("sensor " + hud.connection);
    else if (state.connection.startsWith("sensor") && hud.connection === "connected") setConnection("live");
  }

  // ------------------------------------------------------------------ controls

  function buildTasks(tasks) {
    const box = $("tasks");
    box.replaceChildren();
    for (const name of tasks.available) {
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.type = "checkbox";
      input.value = name;
      input.id = `task-${name}`;
      input.checked = tasks.enabled.includes(name);
      input.disabled = state.readOnly;
      input.addEventListener("change", () => {
        const chosen = [...document.querySelectorAll("#tasks input")].filter((i) => i.checked).map((i) => i.value);
        const id = send({ action: "tasks", value: chosen });
        if (id) state.pending.set(id, "tasks-applied");
      });
      label.append(input, ` ${name}`);
      box.append(label);
    }
    setEcho("tasks-applied", `running: ${tasks.enabled.join(", ") || "none"}`);
  }

  function buildCatalog(entries, models) {
    $("catalog-box").hidden = false;
    const body = $("catalog").tBodies[0];
    body.replaceChildren();
    for (const entry of entries) {
      const row = body.insertRow();
      row.insertCell().textContent = entry.name;
      row.insertCell().textContent = entry.task;
      row.insertCell().textContent = entry.version;
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "install";
      button.dataset.model = `${entry.name}@${entry.version}`;
      button.disabled = state.readOnly;
      button.addEventListener("click", () => {
        $("install-progress").hidden = false;
        $("install-progress").value = 0;
        const id = send({ action: "install", name: entry.name, version: entry.version });
        if (id) state.pending.set(id, "install-applied");
      });
      row.insertCell().append(button);
    }
    buildModels(models);
  }

  function buildModels(models) {
    const list = $("models");
    list.replaceChildren();
    for (const m of models) {
      const item = document.createElement("li");
      item.textContent = `${m.id} (${m.task}, ${m.precision})${m.active ? " active" : ""}`;
      item.dataset.version = m.version;
      list.append(item);
    }
  }

  function bind() {
    $("pause").addEventListener("click", () => {
      state.paused = !state.paused;
      $("pause").textContent = state.paused ? "resume" : "pause";
      if (!state.paused && state.latest) show(state.latest);
    });
    $("zoom").addEventListener("change", () => { state.zoom = Number($("zoom").value); draw(); });
    for (const id of ["ov-boxes", "ov-ocr", "ov-lane", "ov-class"]) $(id).addEventListener("change", () => {
      draw();
      if (state.lastResult) drawPanels(state.lastResult);
    });
    $("score-filter").addEventListener("input", () => {
      $("score-filter-value").textContent = Number($("score-filter").value).toFixed(2);
      draw();
    });
    $("view").addEventListener("mousemove", (event) => {
      const frame = state.shown;
      if (!frame) return;
      const rect = $("view").getBoundingClientRect();
      const x = Math.floor(((event.clientX - rect.left) / rect.width) * frame.header.width);
      const y = Math.floor(((event.clientY - rect.top) / rect.height) * frame.header.height);
      $("cursor").textContent = `${x}, ${y}`;
    });
    $("threshold").addEventListener("input", () => {
      $("threshold-value").textContent = Number($("threshold").value).toFixed(2);
    });
    $("threshold").addEventListener("change", () => {
      const id = send({ action: "config", key: "detect.score_threshold", value: Number($("threshold").value) });
      if (id) state.pending.set(id, "threshold-applied");
    });
    $("ocr-pattern-apply").addEventListener("click", () => {
      const id = send({ action: "config", key: "ocr.pattern", value: $("ocr-pattern").value });
      if (id) state.pending.set(id, "ocr-pattern-applied");
    });
    $("ocr-lexicon-apply").addEventListener("click", () => {
      const words = $("ocr-lexicon").value.split(",").map((w) => w.trim()).filter(Boolean);
      const id = send({ action: "config", key: "ocr.lexicon", value: words });
      if (id) state.pending.set(id, "ocr-lexicon-applied");
    });
    $("save").addEventListener("click", () => {
      const id = send({ action: "save" });
      if (id) state.pending.set(id, "save-applied");
    });
    $("preview-apply").addEventListener("click", () => {
      const id = send({
        action: "preview",
        fps: Number($("preview-fps").value),
        quality: Number($("preview-quality").value),
        max_width: Number($("preview-width").value),
      });
      if (id) state.pending.set(id, "preview-applied");
    });
  }

  bind();
  connect();
})();
