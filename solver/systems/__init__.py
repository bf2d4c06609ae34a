"""The arithmetic of machines: chips (``chips``: presets and the figures a formula takes),
rooflines (``roofline``), inference and the decode read (``inference``, ``decode_read``), training
(``training``), parallelism and collectives (``parallelism``, ``collectives``, ``interconnect``),
serving (``serving``) and quantised formats (``quant``). Nothing is imported here."""
