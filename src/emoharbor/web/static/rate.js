// Keyboard shortcuts and saving each answer as it is given. The page works without this file:
// the Save and Submit buttons post the whole form.
(function () {
  "use strict";
  var form = document.getElementById("rating");
  if (!form) { return; }
  var kind = form.getAttribute("data-kind");
  var fieldset = form.querySelector("fieldset");
  var locked = fieldset.disabled;
  var rows = Array.prototype.slice.call(form.querySelectorAll("tr.dim"));
  var statusEl = document.getElementById("status");
  var reason = document.getElementById("reason");
  var current = 0;

  function setStatus(text) { if (statusEl) { statusEl.textContent = text; } }

  function checked(name) {
    var el = form.querySelector('input[name="' + name + '"]:checked');
    return el ? el.value : null;
  }

  function mark(row) {
    var dim = row.getAttribute("data-dim");
    var choice = checked("choice." + dim);
    row.classList.toggle("tie", choice === "tie");
  }

  function focusRow(i) {
    if (!rows.length) { return; }
    current = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach(function (r, k) { r.classList.toggle("current", k === current); });
    rows[current].focus({ preventScroll: true });
    rows[current].scrollIntoView({ block: "nearest" });
  }

  // -- saving: one request at a time, always the whole form, so a late reply never overwrites a newer one;
  // a submit waits for the save in flight, so no save arrives after the item is submitted
  var inFlight = false, again = false, submitting = false, pendingSubmit = null, timer = null;
  function save() {
    if (locked || submitting) { return; }
    if (inFlight) { again = true; return; }
    inFlight = true;
    var data = new URLSearchParams(new FormData(form));
    data.set("action", "autosave");
    setStatus("Saving\u2026");
    fetch(form.getAttribute("action"), { method: "POST", body: data, credentials: "same-origin" })
      .then(function (r) { setStatus(r.ok ? "Saved" : "Not saved (error " + r.status + "): use the Save button"); })
      .catch(function () { setStatus("Not saved: no connection. Your answers are still on this page."); })
      .then(function () {
        inFlight = false;
        if (pendingSubmit) { var go = pendingSubmit; pendingSubmit = null; go(); return; }
        if (again) { again = false; save(); }
      });
  }

  form.addEventListener("submit", function (e) {
    clearTimeout(timer);
    if (inFlight) {
      e.preventDefault();
      var submitter = e.submitter;
      pendingSubmit = function () { form.requestSubmit(submitter); };
      return;
    }
    submitting = true;
  });
  form.addEventListener("change", function (e) {
    var row = e.target.closest ? e.target.closest("tr.dim") : null;
    if (row) { mark(row); current = rows.indexOf(row); rows.forEach(function (r, k) { r.classList.toggle("current", k === current); }); }
    save();
  });
  if (reason) {
    reason.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(save, 800); });
  }

  function pick(name, value) {
    var el = form.querySelector('input[name="' + name + '"][value="' + value + '"]');
    if (!el || el.disabled) { return false; }
    if (!el.checked) {
      el.checked = true;
      el.dispatchEvent(new Event("change", { bubbles: true }));
    }
    return true;
  }

  document.addEventListener("keydown", function (e) {
    var submit = document.getElementById("submit");
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      if (submit) { e.preventDefault(); submit.click(); }
      return;
    }
    var tag = e.target.tagName;
    if (tag === "TEXTAREA" || (tag === "INPUT" && e.target.type === "text")) {
      if (e.key === "Escape") { e.target.blur(); focusRow(current); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || locked || !rows.length) { return; }
    var key = e.key.toLowerCase();
    var dim = rows[current].getAttribute("data-dim");
    if (key === "arrowdown" || key === "j") {
      e.preventDefault(); focusRow(current + 1);
    } else if (key === "arrowup" || key === "k") {
      e.preventDefault(); focusRow(current - 1);
    } else if (kind === "pair" && (key === "a" || key === "b" || key === "t")) {
      e.preventDefault();
      var value = key === "a" ? "A" : key === "b" ? "B" : "tie";
      pick("choice." + dim, value);
      if (value === "tie") { focusRow(current + 1); }
    } else if (/^[1-5]$/.test(key)) {
      e.preventDefault();
      if (pick((kind === "pair" ? "strength." : "score.") + dim, key)) { focusRow(current + 1); }
    } else if (kind === "pair" && key === "r" && reason) {
      e.preventDefault(); reason.focus();
    }
  });

  rows.forEach(mark);
  if (!locked) {
    var firstOpen = rows.findIndex(function (r) {
      var dim = r.getAttribute("data-dim");
      return kind === "pair" ? !checked("choice." + dim) : !checked("score." + dim);
    });
    focusRow(firstOpen < 0 ? 0 : firstOpen);
  }
  // after a submit with answers missing: the "please answer" banner in view (the row focus above may have
  // scrolled it away), focused so that a screen reader reads it; the keys still act on the current row
  var banner = document.querySelector(".banner.alert");
  if (banner) {
    banner.setAttribute("tabindex", "-1");
    banner.scrollIntoView({ block: "center" });
    banner.focus({ preventScroll: true });
  }
})();
