"""The question bank: parametrised problem families and curated items from the source texts.

Every answer is computed by ``solver``; nothing here types in a number by hand.
"""
