(function () {
  "use strict";
  function sortKey(td) {
    var el = td.querySelector("[data-sort]");
    var raw = el ? el.getAttribute("data-sort") : td.textContent.trim();
    var n = parseFloat(raw);
    return { empty: raw === "", num: isNaN(n) ? null : n, text: (td.textContent || "").trim().toLowerCase() };
  }
  function compare(a, b) {
    if (a.empty !== b.empty) { return a.empty ? 1 : -1; }
    if (a.num !== null && b.num !== null) { return a.num - b.num; }
    return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
  }
  function sortBy(table, th, col) {
    var dir = th.getAttribute("data-dir") === "asc" ? "desc" : "asc";
    Array.prototype.forEach.call(table.querySelectorAll("th"), function (h) { h.removeAttribute("data-dir"); });
    th.setAttribute("data-dir", dir);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var c = compare(sortKey(r1.cells[col]), sortKey(r2.cells[col]));
      return dir === "asc" ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener("click", function () { sortBy(table, th, col); });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("input.filter"), function (box) {
    box.addEventListener("input", function () {
      var target = document.getElementById(box.getAttribute("data-target"));
      if (!target) { return; }
      var q = box.value.trim().toLowerCase();
      Array.prototype.forEach.call(target.querySelectorAll("details.conv"), function (d) {
        d.style.display = !q || (d.getAttribute("data-search") || "").indexOf(q) >= 0 ? "" : "none";
      });
    });
  });
  document.body.setAttribute("data-report-ready", "1");
})();
