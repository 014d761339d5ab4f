"""Answer generators ("providers") behind one small interface; see ``base.Provider``."""
