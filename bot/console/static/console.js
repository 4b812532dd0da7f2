/* The console's own script: small, no framework. htmx swaps the server's (escaped) fragments;
   this only measures update latency, reloads a page that fell behind, draws latency charts with
   uPlot from data attributes, keeps the NPC editor's lines aligned and plays voice previews.
   It never writes data into the page as HTML. */
(function () {
  "use strict";
  var glyphoxa = (window.glyphoxa = { latencies: [], reloading: false });

  document.addEventListener("htmx:sseMessage", function (event) {
    var message = event.detail || {};
    var parts = String(message.lastEventId || "").split(".");
    var sent = Number(parts[1]);
    if (sent > 0) glyphoxa.latencies.push({ event: message.type, sent: sent, ms: Date.now() - sent });
    if (message.type === "reload" && !glyphoxa.reloading) {
      glyphoxa.reloading = true;
      window.setTimeout(function () { window.location.reload(); }, 1200);
    }
    if (message.type === "line") followTranscript();
  });

  function followTranscript() {
    var list = document.getElementById("transcript");
    if (list && list.scrollHeight - list.scrollTop - list.clientHeight < 160) {
      list.scrollTop = list.scrollHeight;
    }
  }

  var palette = ["#6c757d", "#5fa8ff", "#adb5bd", "#c77dff", "#f2b84b", "#3ec28f"];
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
        return { label: stage, stroke: colour, fill: colour + "99", width: 1 };
      });
      box.textContent = "";
      new window.uPlot({
        width: box.clientWidth || 380, height: 180,
        scales: { x: { time: false } },
        axes: [{ stroke: "#9d97b3", grid: { show: false } }, { stroke: "#9d97b3", size: 64, values: function (u, v) { return v.map(function (x) { return x + " ms"; }); } }],
        legend: { show: false },
        series: [{ label: "turn" }].concat(lines)
      }, data, box);
    });
  }
  document.addEventListener("DOMContentLoaded", function () { drawCharts(document); fitEditor(); });
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.target;
    if (target && target.id === "stats") drawCharts(target);
    if (target && target.id === "notices") {
      var notice = target.firstElementChild;  // a notice shows for a while, then goes
      window.setTimeout(function () { if (notice) notice.remove(); }, 8000);
    }
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.target;  // a line said or a direction given: the field is free again
    if (event.detail.successful && form.matches && form.matches("form.ctl.clears")) form.reset();
  });

  function fitEditor() {
    var text = document.getElementById("npc-text");
    if (!text) return;
    text.style.height = "auto";
    text.style.height = text.scrollHeight + "px";
  }
  document.addEventListener("input", function (event) {
    if (event.target && event.target.id === "npc-text") fitEditor();
  });
  document.addEventListener("keydown", function (event) {
    var text = event.target;
    if (event.key !== "Tab" || !text || text.id !== "npc-text") return;
    event.preventDefault();
    var start = text.selectionStart;
    text.setRangeText("  ", start, text.selectionEnd, "end");
    text.dispatchEvent(new Event("input", { bubbles: true }));
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.play") : null;
    if (!button) return;
    button.disabled = true;
    var audio = new Audio(button.getAttribute("data-src"));
    audio.addEventListener("ended", function () { button.disabled = false; });
    audio.addEventListener("error", function () { button.disabled = false; button.textContent = "voice failed"; });
    audio.play().catch(function () { button.disabled = false; });
  });
})();
