"""Embedders behind one small interface: MiniLM offline (int8 ONNX) and OpenAI embeddings."""
