/* The console's own script: small, no framework. It keeps the page's streams (the live table's
   and, for the DM, the pulse every page shares), swaps the server's escaped fragments into the
   elements that name them (data-sse="stream:event"), and says loudly when the bot is away:
   a banner, controls paused, reconnection with backoff, the page current again when the bot
   returns. It also counts down tool approvals, keeps the navigation's counts, measures update
   latency, draws latency charts with uPlot, guards unsaved NPC edits and plays voice previews.
   It never writes data into the page as HTML itself: fragments go through htmx.swap. */
(function () {
  "use strict";
  var glyphoxa = (window.glyphoxa = { latencies: [], reloading: false, streams: {}, offline: false });
  var body = document.body;

  // ---- streams -------------------------------------------------------------------------------
  function Stream(name, url, resumable) {
    this.name = name;
    this.url = url;
    this.resumable = resumable;
    this.lastSeq = null;
    this.failures = 0;
    this.finished = false;
    this.source = null;
    this.up = false;
  }
  Stream.prototype.events = function () {
    var names = { reload: 1, ended: 1 };
    document.querySelectorAll("[data-sse^='" + this.name + ":']").forEach(function (el) {
      names[el.getAttribute("data-sse").split(":")[1]] = 1;
    });
    return Object.keys(names);
  };
  Stream.prototype.connect = function () {
    var self = this;
    var url = this.url;
    if (this.resumable && this.lastSeq !== null) url = url.split("?")[0] + "?after=" + this.lastSeq;
    var source = (this.source = new EventSource(url));
    source.onopen = function () {
      self.failures = 0;
      self.up = true;
      connectionChanged();
    };
    source.onerror = function () {
      source.close();
      if (self.source !== source || self.finished) return;
      self.up = false;
      connectionChanged();
      self.retry();
    };
    this.events().forEach(function (name) {
      source.addEventListener(name, function (event) { self.receive(name, event); });
    });
  };
  Stream.prototype.receive = function (name, event) {
    var id = String(event.lastEventId || "").split(".");
    if (this.resumable && id[0]) this.lastSeq = id[0];
    var sent = Number(id[1]);
    if (sent > 0) glyphoxa.latencies.push({ event: name, sent: sent, ms: Date.now() - sent });
    if (name === "ended") this.finished = true;
    if (name === "reload" && !glyphoxa.reloading) {
      glyphoxa.reloading = true;
      window.setTimeout(function () { window.location.reload(); }, 1200);
    }
    var stream = this.name;
    document.querySelectorAll("[data-sse='" + stream + ":" + name + "']").forEach(function (el) {
      var style = el.getAttribute("data-swap") || "innerHTML";
      if (window.htmx) window.htmx.swap(el, event.data, { swapStyle: style, swapDelay: 0, settleDelay: 0 });
      document.dispatchEvent(new CustomEvent("glyphoxa:swapped", { detail: { stream: stream, name: name, target: el } }));
    });
    if (this.finished) this.source.close();
  };
  Stream.prototype.retry = function () {
    var self = this;
    var delay = Math.min(30, Math.pow(2, this.failures)) * 1000 * (0.8 + Math.random() * 0.4);
    this.failures += 1;
    glyphoxa.nextRetry = Date.now() + delay;
    window.setTimeout(function () { self.probe(); }, delay);
  };
  Stream.prototype.probe = function () {
    var self = this;
    fetch("/status", { cache: "no-store", credentials: "same-origin" })
      .then(function (response) {
        if (response.status === 401) { window.location.reload(); return null; }  // logged out or a new bot
        if (!response.ok) throw new Error("status " + response.status);
        return response.json();
      })
      .then(function (status) {
        if (!status) return;
        var table = body.getAttribute("data-table");
        if (self.name === "table" && status.tables.indexOf(table) < 0) {
          window.location.reload();  // the table ended meanwhile: its URL leads to its record
          return;
        }
        self.connect();
      })
      .catch(function () { self.up = false; connectionChanged(); self.retry(); });
  };

  // ---- the connection indicator -----------------------------------------------------------------
  var offlineTimer = null;
  function connectionChanged() {
    var down = Object.keys(glyphoxa.streams).some(function (k) {
      var s = glyphoxa.streams[k];
      return !s.up && !s.finished;
    });
    if (down && !glyphoxa.offline && offlineTimer === null) {
      offlineTimer = window.setTimeout(function () { offlineTimer = null; setOffline(true); }, 1000);
    } else if (!down) {
      if (offlineTimer !== null) { window.clearTimeout(offlineTimer); offlineTimer = null; }
      if (glyphoxa.offline) setOffline(false);
    }
  }
  function setOffline(offline) {
    glyphoxa.offline = offline;
    var banner = document.getElementById("offline");
    if (banner) banner.hidden = !offline;
    body.classList.toggle("offline", offline);
    document.querySelectorAll("main form, #dock form").forEach(function (form) {
      form.querySelectorAll("button, input, select, textarea").forEach(function (control) {
        if (offline && !control.disabled) { control.disabled = true; control.setAttribute("data-paused", "1"); }
        if (!offline && control.getAttribute("data-paused")) { control.disabled = false; control.removeAttribute("data-paused"); }
      });
    });
    document.querySelectorAll(".badge.live, .presence .speaking").forEach(function (el) {
      el.classList.toggle("stale", offline);  // nothing is known to be speaking any more
    });
  }
  window.setInterval(function () {  // "reconnecting in 8 s"
    var detail = document.getElementById("offline-detail");
    if (!detail || !glyphoxa.offline) return;
    var left = Math.max(0, Math.round(((glyphoxa.nextRetry || 0) - Date.now()) / 1000));
    detail.textContent = left > 0 ? "reconnecting in " + left + " s" : "reconnecting";
  }, 500);

  function startStreams() {
    var table = body.getAttribute("data-table");
    if (table) {
      var stream = new Stream("table", "/tables/" + table + "/events?after=" + body.getAttribute("data-seq"), true);
      stream.lastSeq = body.getAttribute("data-seq");
      glyphoxa.streams.table = stream;
      stream.connect();
    }
    if (body.getAttribute("data-role") === "dm") {
      glyphoxa.streams.pulse = new Stream("pulse", "/pulse", false);
      glyphoxa.streams.pulse.connect();
    }
  }

  // ---- what the pulse brings: approvals, counts, tables --------------------------------------------
  var heard = {};
  function countdowns() {
    var now = Date.now();
    document.querySelectorAll("#dock .approval.waiting[data-deadline]").forEach(function (card) {
      var left = Math.ceil((Number(card.getAttribute("data-deadline")) - now) / 1000);
      var timer = card.querySelector(".countdown");
      if (left > 0) {
        if (timer) timer.textContent = left + " s left";
        card.classList.toggle("urgent", left <= 10);
        return;
      }
      card.classList.remove("waiting");
      card.classList.add("answered");
      if (timer) timer.textContent = "denied: no answer";
      card.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    });
  }
  window.setInterval(countdowns, 1000);

  function setCount(id, value, label) {
    var badge = document.getElementById(id);
    if (!badge) return;
    badge.textContent = value;
    badge.hidden = !(value > 0);
    badge.setAttribute("data-count", value);
    badge.setAttribute("aria-label", value + " " + label);
  }
  function soundOn() { return window.localStorage && window.localStorage.getItem("glyphoxa-sound") === "on"; }
  function chime() {
    try {
      var audio = new (window.AudioContext || window.webkitAudioContext)();
      var tone = audio.createOscillator(), gain = audio.createGain();
      tone.frequency.value = 880;
      gain.gain.setValueAtTime(0.15, audio.currentTime);
      gain.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.4);
      tone.connect(gain); gain.connect(audio.destination);
      tone.start(); tone.stop(audio.currentTime + 0.4);
    } catch (e) { /* no audio here: the badge and the card still show it */ }
  }
  document.addEventListener("glyphoxa:swapped", function (event) {
    var detail = event.detail;
    if (detail.stream !== "pulse") {
      if (detail.name === "line") { filterTranscript(); followTranscript(); }
      if (detail.name === "stats") drawCharts(detail.target);
      return;
    }
    if (detail.name === "counts") {
      var counts = detail.target.firstElementChild;
      if (!counts) return;
      var waiting = Number(counts.getAttribute("data-approvals"));
      setCount("count-approvals", waiting, "waiting for your answer");
      setCount("count-review", Number(counts.getAttribute("data-review")), "facts to review");
      document.title = document.title.replace(/^\(\d+\) /, "");
      if (waiting > 0) document.title = "(" + waiting + ") " + document.title;
    }
    if (detail.name === "dock") {
      var fresh = false;
      detail.target.querySelectorAll(".approval.waiting").forEach(function (card) {
        var key = card.getAttribute("data-approval");
        if (!heard[key]) { heard[key] = 1; fresh = true; }
      });
      if (fresh && soundOn()) chime();
      countdowns();
    }
    if (detail.name === "tables" && body.getAttribute("data-follow-table")) {
      var link = detail.target.querySelector("a[data-table-link]");
      if (link) window.location.assign(link.getAttribute("href"));
    }
    if (detail.name === "notice") {
      var notice = detail.target.firstElementChild;  // a notice shows for a while, then goes
      window.setTimeout(function () { if (notice) notice.remove(); }, 8000);
    }
  });
  function soundToggle() {
    var button = document.getElementById("sound-toggle");
    if (!button) return;
    var paint = function () {
      button.setAttribute("aria-pressed", soundOn() ? "true" : "false");
      button.textContent = soundOn() ? "Sound on" : "Sound off";
    };
    paint();
    button.addEventListener("click", function () {
      window.localStorage.setItem("glyphoxa-sound", soundOn() ? "off" : "on");
      paint();
      if (soundOn()) chime();
    });
  }

  // ---- the live page ---------------------------------------------------------------------------------
  function followTranscript() {
    var list = document.getElementById("transcript");
    if (list && list.scrollHeight - list.scrollTop - list.clientHeight < 160) list.scrollTop = list.scrollHeight;
  }
  function filterTranscript() {
    var box = document.getElementById("transcript-search");
    if (!box) return;
    var words = box.value.trim().toLowerCase();
    document.querySelectorAll("#transcript > li").forEach(function (line) {
      line.hidden = words !== "" && line.textContent.toLowerCase().indexOf(words) < 0;
    });
  }
  document.addEventListener("input", function (event) {
    if (event.target && event.target.id === "transcript-search") filterTranscript();
  });
  window.setInterval(function () {
    document.querySelectorAll(".timer[data-since]").forEach(function (timer) {
      var minutes = Math.floor((Date.now() - Number(timer.getAttribute("data-since"))) / 60000);
      timer.textContent = minutes >= 60 ? Math.floor(minutes / 60) + " h " + String(minutes % 60).padStart(2, "0") + " min" : minutes + " min";
    });
  }, 15000);

  var palette = ["#6c757d", "#2f7fd6", "#8a939b", "#9b51d6", "#c08a1e", "#20a070"];
  function drawCharts(root) {
    if (!window.uPlot) return;
    (root || document).querySelectorAll(".chart[data-series]").forEach(function (box) {
      var series = JSON.parse(box.getAttribute("data-series"));
      var stages = Object.keys(series).filter(function (k) { return k !== "turn"; });
      if (!series.turn || series.turn.length === 0) return;
      var xs = series.turn.map(function (_, i) { return i + 1; });
      var stacked = [], sums = xs.map(function () { return 0; });
      stages.forEach(function (stage) {
        sums = sums.map(function (s, i) { return s + (series[stage][i] || 0); });
        stacked.push(sums.slice());
      });
      var data = [xs].concat(stacked.reverse());
      var lines = stages.slice().reverse().map(function (stage, i) {
        var colour = palette[stages.length - 1 - i];
        return { label: stage, stroke: colour, fill: colour + "99", width: 1, value: function (u, v) { return v == null ? "-" : Math.round(v) + " ms"; } };
      });
      var axis = getComputedStyle(body).getPropertyValue("--muted").trim() || "#777";
      box.textContent = "";
      new window.uPlot({
        width: box.clientWidth || 380, height: 200,
        scales: { x: { time: false } },
        axes: [
          { stroke: axis, grid: { show: false }, label: "answered turn", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500],
            values: function (u, v) { return v.map(function (x) { return Number.isInteger(x) ? String(x) : ""; }); } },
          { stroke: axis, size: 64, values: function (u, v) { return v.map(function (x) { return x + " ms"; }); } }
        ],
        legend: { show: true, live: false },
        series: [{ label: "turn", value: function (u, v) { return v == null ? "-" : String(v); } }].concat(lines)
      }, data, box);
    });
  }

  // ---- controls: every failure said beside the control ------------------------------------------
  function say(form, text) {
    var out = form && form.querySelector("output");
    if (!out) return;
    out.textContent = text;
    out.className = "flash error";
  }
  document.addEventListener("htmx:validation:failed", function (event) {
    var elt = event.detail.elt || event.target;
    var form = elt.form || elt.closest("form");
    var message = event.detail.message || elt.validationMessage || "not a valid value";
    say(form, (elt.getAttribute("aria-label") || elt.name) + ": " + message);
  });
  document.addEventListener("invalid", function (event) {  // the browser stopped the submit
    var elt = event.target;
    var form = elt.form || (elt.closest && elt.closest("form"));
    say(form, (elt.getAttribute("aria-label") || elt.name) + ": " + (elt.validationMessage || "not a valid value"));
  }, true);
  document.addEventListener("htmx:sendError", function (event) {
    say(event.detail.elt.closest("form"), "The bot did not answer: is it running? Nothing was changed.");
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.target;  // a line said or a direction given: the field is free again
    if (event.detail.successful && form.matches && form.matches("form.clears")) {
      form.querySelectorAll("input[name=text]").forEach(function (field) { field.value = ""; });
    }
  });

  // ---- the NPC editor -----------------------------------------------------------------------------
  var editorSaved = null, leaving = false;
  function fitEditor() {
    var text = document.getElementById("npc-text");
    if (!text) return;
    text.style.height = "auto";
    text.style.height = text.scrollHeight + "px";
  }
  function editorDirty() {
    var text = document.getElementById("npc-text");
    return text !== null && editorSaved !== null && text.value !== editorSaved;
  }
  window.addEventListener("beforeunload", function (event) {
    if (!editorDirty() || leaving) return;
    event.preventDefault();
    event.returnValue = "";
  });
  document.addEventListener("submit", function (event) {
    if (event.target && event.target.id === "editor") leaving = true;  // no JS path: a real post
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var text = document.getElementById("npc-text");
    var path = (event.detail.requestConfig || {}).path || "";
    if (text && event.detail.successful && /\/save$/.test(path)) editorSaved = text.value;
  });
  document.addEventListener("input", function (event) {
    if (event.target && event.target.id === "npc-text") fitEditor();
  });
  var released = false;
  document.addEventListener("keydown", function (event) {
    var text = event.target;
    if (!text || text.id !== "npc-text") return;
    if (event.key === "Escape") { released = true; return; }
    if (event.key !== "Tab" || event.shiftKey || released || event.ctrlKey || event.altKey || event.metaKey) {
      if (event.key !== "Tab") released = false;
      return;
    }
    event.preventDefault();
    text.setRangeText("  ", text.selectionStart, text.selectionEnd, "end");
    text.dispatchEvent(new Event("input", { bubbles: true }));
  });
  document.addEventListener("focusin", function (event) {
    if (event.target && event.target.id === "npc-text") released = false;
  });

  // ---- voice previews ---------------------------------------------------------------------------------
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest(".play[data-src]") : null;
    if (!button) return;
    event.preventDefault();
    if (button.getAttribute("aria-disabled") === "true") return;
    button.setAttribute("aria-disabled", "true");
    var audio = new Audio(button.getAttribute("data-src"));
    var done = function () { button.removeAttribute("aria-disabled"); };
    audio.addEventListener("ended", done);
    audio.addEventListener("error", function () { done(); button.textContent = "voice failed"; });
    audio.play().catch(done);
  });

  document.addEventListener("DOMContentLoaded", function () {
    var text = document.getElementById("npc-text");
    if (text) editorSaved = text.value;
    drawCharts(document);
    fitEditor();
    soundToggle();
    countdowns();
    if (window.matchMedia("(max-width: 760px)").matches) {  // a phone: the transcript first
      document.querySelectorAll("details.drawer").forEach(function (drawer) { drawer.open = false; });
    }
    startStreams();
  });
})();
