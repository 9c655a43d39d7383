"""Presentation for people: recovery.json files into pandas, tables, pictures and report.html."""
